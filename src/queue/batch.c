/*
 * batch.c - batches, group settings and retention: what `taskq batch`,
 * `taskq group set`, `taskq clear`, `taskq wait --batch` and the
 * supervisor's retention sweep read and change.
 */
#include "internal.h"
