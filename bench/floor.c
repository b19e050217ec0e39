/*
 * floor.c - benchmark baseline: the exec floor of a taskq command.
 *
 * Does nothing, but is linked against the same shared libraries as the taskq
 * binary (sqlite3, cjson, bsd, util) and keeps them: meson links with
 * --as-needed, so a library none of whose functions is called would be
 * dropped and the floor would look cheaper than it is. One cheap call into
 * each keeps it in DT_NEEDED (bench/run checks that against taskq's list).
 * 1000 runs of this are what 1000 `taskq submit` runs cannot beat: process
 * creation, the dynamic loader, relocations.
 */
#include <pty.h>
#include <stdio.h>

#include <bsd/stdlib.h>
#include <cjson/cJSON.h>
#include <sqlite3.h>

/* volatile: the compiler may not prove the calls away. */
static volatile int sink;

int main(int argc, char **argv)
{
	const char *e = NULL;
	int (*volatile pty)(int *, int *, char *, const struct termios *,
			    const struct winsize *) = openpty;

	(void)argv;
	sink = sqlite3_libversion_number();
	sink += cJSON_Version()[0];
	sink += (int)strtonum("1", 0, 1, &e);
	/* openpty is never called (argc is never 99); taking its address is
	 * enough to need libutil. */
	if (argc == 99)
		sink += pty(NULL, NULL, NULL, NULL, NULL);
	return 0;
}
