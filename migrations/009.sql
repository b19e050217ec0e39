-- Schema 8 -> 9: no index on the lease.
--
-- tasks_lease (lease_until of the running tasks) was read by one statement,
-- the supervisor's look for expired leases, and written by every claim,
-- every finish and every lease renewal: a page of the WAL each (issue 21:
-- 2 of the 18 pages a task wrote). The running tasks are a few (one per
-- worker) and tasks_running holds just them: the expired ones are found by
-- reading those (ST_EXPIRED) at no cost that grows with the queue.
--
-- Written to run on any database of version 8, also one set back by hand.
DROP INDEX IF EXISTS tasks_lease;

PRAGMA user_version = 9;
