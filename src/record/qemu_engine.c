/* SPDX-License-Identifier: MIT */
#include "src/record/backend.h"
const struct rec_backend rec_backend_qemu = {.name="qemu"};
