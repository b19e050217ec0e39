/*
 * doorbell.h - wake an idle worker at once when a task is submitted.
 *
 * The doorbell is a FIFO in the state directory. Idle workers poll its read
 * end; `taskq submit` writes one byte after its commit. A byte is a token:
 * the worker that reads it claims, so one submit wakes one worker, not all.
 * Bytes that arrive while every worker is busy wait in the pipe and are
 * drained by the next worker to go idle (which claims until nothing is left
 * anyway). Nothing depends on the doorbell for correctness: workers also wake
 * on their own timers, so a lost byte costs latency, never a task.
 */
#ifndef TQ_DOORBELL_H
#define TQ_DOORBELL_H

#include "common/err.h"

/*
 * Open (creating it 0600 if missing) the doorbell of state directory home
 * for reading. O_RDWR so the FIFO never reports EOF or POLLHUP when no
 * writer is open; O_NONBLOCK; O_CLOEXEC. Returns an fd or a negative TQ_E*.
 */
int tq_doorbell_open(const char *home, struct tq_err *err);

/* Read and discard every byte waiting on fd. Returns how many there were. */
int tq_doorbell_drain(int fd);

/*
 * Ring the doorbell of home: one byte, non-blocking. Returns 0 also when no
 * worker listens (ENXIO) or the pipe is full (EAGAIN): both mean a worker
 * will look at the queue anyway. Async-signal-safe; costs three syscalls.
 */
int tq_doorbell_ring(const char *home);

/*
 * Ring through fd, the doorbell held open (tq_doorbell_open): one byte,
 * one system call, for a process that rings often (a worker claiming from
 * a backlog, the supervisor after each submit). As the FIFO is held open
 * for reading (by fd itself), the byte is taken even when no worker
 * listens, and waits for the next one to go idle, as a byte rung while
 * every worker is busy does. A full pipe (EAGAIN) is fine: bytes are
 * waiting already. Async-signal-safe.
 */
void tq_doorbell_ring_fd(int fd);

#endif
