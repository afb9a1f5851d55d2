/* Temporary output files that must not outlive an interrupted run.
 *
 * Outputs are written to a temporary file and renamed into place (sink.c,
 * src/recording/recfile_write.c), unless the path is a device or a FIFO.  A
 * signal that ends ptscope (Ctrl-C in decode or convert) would leave that
 * temporary file behind; so each one is tracked here while it exists, and
 * ps_tmp_cleanup_on_signals() installs handlers that remove them all before
 * ptscope dies of the signal as usual.
 */
#ifndef PTSCOPE_OUTPUT_TMPFILE_H
#define PTSCOPE_OUTPUT_TMPFILE_H

/* Does @path name something that exists and is neither a file nor a
 * directory (/dev/null, a FIFO, a terminal)?  Such a path is written in
 * place: a temporary file renamed over it would replace it. */
int ps_path_is_special(const char *path);

/* Remember @path until ps_tmp_untrack(); returns a slot (-1: too many at
 * once or too long a name: then the file is not tracked). */
int ps_tmp_track(const char *path);

/* Forget the slot (the file was renamed or removed).  Accepts -1. */
void ps_tmp_untrack(int slot);

/* Keep the list in memory shared with child processes forked from now
 * on, so a parent can remove what a child that died had open
 * (src/cli/isolate.c).  Returns 0 or -1 (no memory). */
int ps_tmp_share(void);

/* Remove every tracked file now (async-signal-safe). */
void ps_tmp_remove_all(void);

/* SIGINT, SIGTERM, SIGHUP and SIGQUIT: remove every tracked file, then die
 * of the signal with its default action (the exit status shows it). */
void ps_tmp_cleanup_on_signals(void);

#endif
