/* SPDX-License-Identifier: MIT */
/* The format table: names and file extensions → formats, and the writer
 * life cycle (open a sink and a format writer; finish or abort both).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/output/fxt.h"
#include "src/output/json.h"
#include "src/output/perfetto.h"
#include "src/output/sink.h"
#include "src/output/text.h"

struct format_name {
	const char *name;
	enum ps_format format;
};

static const struct format_name format_names[] = {
    {"fxt", PS_FORMAT_FXT},	      {"fuchsia", PS_FORMAT_FXT},
    {"perfetto", PS_FORMAT_PERFETTO}, {"pftrace", PS_FORMAT_PERFETTO},
    {"proto", PS_FORMAT_PERFETTO},    {"json", PS_FORMAT_JSON},
    {"chrome", PS_FORMAT_JSON},	      {"text", PS_FORMAT_TEXT},
    {"txt", PS_FORMAT_TEXT},
};

/* Extensions, matched without case, after a trailing ".gz" is removed. */
static const struct format_name format_exts[] = {
    {".fxt", PS_FORMAT_FXT},
    {".pftrace", PS_FORMAT_PERFETTO},
    {".perfetto-trace", PS_FORMAT_PERFETTO},
    {".pb", PS_FORMAT_PERFETTO},
    {".proto", PS_FORMAT_PERFETTO},
    {".json", PS_FORMAT_JSON},
    {".txt", PS_FORMAT_TEXT},
};

int ps_format_from_name(const char *name)
{
	if (!name)
		return ps_err_detail(PS_ERR_INVAL, "no format name given");
	for (size_t i = 0; i < sizeof(format_names) / sizeof(*format_names);
	     i++)
		if (!strcasecmp(name, format_names[i].name))
			return format_names[i].format;
	return ps_err_detail(PS_ERR_INVAL,
			     "unknown format '%s'; use fxt, perfetto, json or "
			     "text",
			     name);
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && !strncasecmp(s + len - n, suffix, n);
}

int ps_format_from_path(const char *path, int *gzip)
{
	size_t len = path ? strlen(path) : 0;
	int gz = ends_with(path ? path : "", len, ".gz");

	if (gz)
		len -= 3;
	if (gzip)
		*gzip = gz;
	for (size_t i = 0; i < sizeof(format_exts) / sizeof(*format_exts); i++)
		if (ends_with(path, len, format_exts[i].name))
			return format_exts[i].format;
	return PS_FORMAT_FXT;
}

/* The format writer on an open sink. */
static int writer_new(struct ps_sink *sink, enum ps_format format,
		      struct ps_writer **out)
{
	switch (format) {
	case PS_FORMAT_FXT:
		return fxt_writer_new(sink, out);
	case PS_FORMAT_PERFETTO:
		return pftw_writer_new(sink, out);
	case PS_FORMAT_JSON:
		return json_writer_new(sink, out);
	case PS_FORMAT_TEXT:
		return text_writer_new(sink, NULL, out);
	case PS_FORMAT_AUTO:
		break;
	}
	return ps_err_detail(PS_ERR_INVAL, "no output format chosen");
}

int ps_writer_open(const char *path, enum ps_format format,
		   struct ps_writer **out)
{
	struct ps_sink *sink;
	int gzip = 0, f, err;

	if (!path || !out)
		return ps_err_detail(PS_ERR_INVAL,
				     "ps_writer_open needs a path and out");
	f = ps_format_from_path(path, &gzip);
	if (format == PS_FORMAT_AUTO)
		format = (enum ps_format)f;
	if (format < PS_FORMAT_FXT || format > PS_FORMAT_TEXT)
		return ps_err_detail(PS_ERR_INVAL, "unknown output format %d",
				     (int)format);
	err = ps_sink_open(path, gzip, &sink);
	if (err)
		return err;
	err = writer_new(sink, format, out);
	if (err) {
		ps_sink_abort(sink);
		return err;
	}
	(*out)->sink = sink;
	return 0;
}

int ps_writer_finish(struct ps_writer *w)
{
	struct ps_sink *sink;
	int err;

	if (!w)
		return ps_err_detail(PS_ERR_INVAL, "ps_writer_finish: NULL");
	sink = w->sink;
	err = w->ops->flush(w);
	w->ops->destroy(w);
	if (err) {
		ps_sink_abort(sink);
		return err;
	}
	return ps_sink_commit(sink);
}

void ps_writer_abort(struct ps_writer *w)
{
	struct ps_sink *sink;

	if (!w)
		return;
	sink = w->sink;
	w->ops->destroy(w);
	ps_sink_abort(sink);
}
