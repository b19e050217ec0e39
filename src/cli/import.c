/*
 * import.c - taskq submit --file: many tasks from JSON lines, in one
 * transaction. Placeholder, filled in by the batches work (issue 8).
 */
#include "submit.h"
