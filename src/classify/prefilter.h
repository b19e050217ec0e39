/*
 * prefilter.h - the literal prefilter of the text rules, on its own: from a
 * set of POSIX extended regexes, the literals every match of each must
 * contain, and one Aho-Corasick automaton over all of them, which names in
 * one pass over a text the lines where each regex can match.
 *
 * Internal to src/classify (load.c builds it over the rules' patterns,
 * view.c scans each tail with it); the unit test and the differential fuzz
 * target (tests/fuzz/fuzz_prefilter.c) use it directly.
 *
 * The promise, for a regex compiled with REG_EXTENDED | REG_NEWLINE, with or
 * without REG_ICASE, in the C locale: every line of a text on which regexec
 * finds a match is a candidate line of that regex (the prefilter may name
 * more lines, never fewer). taskq classifies in the C locale (no process
 * calls setlocale before it: cli_output_init sets LC_CTYPE only to print).
 * Mind it before changing that: in a UTF-8 locale glibc's REG_ICASE also
 * matches U+0131 (dotless i) for "i" and U+017F (long s) for "s", bytes
 * this prefilter does not fold, so "Too Many Requeſts" would be missed. A regex whose literals cannot
 * be told (none of LIT_MIN bytes that every match holds) is not served: the
 * caller searches the whole text for it.
 */
#ifndef TQ_CLASSIFY_PREFILTER_H
#define TQ_CLASSIFY_PREFILTER_H

#include <stddef.h>
#include <stdint.h>

/* Aho-Corasick over byte classes: letters folded, bytes in no literal are
 * class 0, which always leads back to the root. */
struct tq_prefilter {
	size_t nclass;
	unsigned char cls[256];
	int32_t *delta;            /* nstates x nclass */
	size_t nstates;
	uint32_t *out_off, *out_n; /* per state: owners in outs[] */
	uint32_t *outs;
};

/* The candidate lines of one regex: offsets of line starts in the text
 * scanned, ascending, each once. */
struct tq_cands {
	size_t *v;
	size_t n, cap;
};

/*
 * Build the prefilter for n patterns (ERE source text, as given to
 * regcomp). served[i] (n bytes, caller's) is set to 1 when pattern i has
 * literals in the automaton, so its candidates bound its matches; 0 when it
 * has none (search the whole text). pf is set up here (no need to zero it)
 * and released with tq_prefilter_release, on failure too. 0 or TQ_ENOMEM.
 */
int tq_prefilter_build(struct tq_prefilter *pf, const char *const *pat, size_t n,
		       unsigned char *served);

/*
 * Scan t (n bytes, any byte; '\n' ends a line) and add to c[i] the start of
 * every line where a literal of pattern i occurs. c is an array of the n
 * patterns the prefilter was built for, zeroed before the first scan (its
 * vectors are the caller's to free). A candidate that cannot be stored for
 * lack of memory is dropped (that line is then not searched: a lost match,
 * never a wrong one). An empty or failed build scans nothing.
 */
void tq_prefilter_scan(const struct tq_prefilter *pf, const char *t, size_t n,
		       struct tq_cands *c);

void tq_prefilter_release(struct tq_prefilter *pf);

#endif
