// Package slurm runs shell commands on a SLURM cluster as job arrays,
// tracks them with batched polls, cancels them, and records on shared
// storage what completed, so that a submitter killed at any point resumes
// without running finished work again. It knows nothing of lacuna's
// pipeline graph: a Job is one command template and a list of instances
// (a for_each sweep), and Submit runs the instances that have not
// completed.
//
// # Submission
//
// Submit writes a batch script and submits it with one `sbatch
// --parsable` call as an array job, --array=0-(N-1)%Limit for a fresh
// sweep of N instances (a resume submits only the indices left). Each
// array task maps SLURM_ARRAY_TASK_ID to its instance, exports
// LACUNA_INSTANCE and LACUNA_INDEX and the job's and instance's
// environment, and runs Command with bash. Resources become --cpus-per-task,
// --mem, --gres=gpu[:type]:N, --time, --partition and --account; each
// task's stdout and stderr go to <LogDir>/<array job id>_<index>.out and
// .err.
//
// # Completion records
//
// The Runner's state directory (New) holds, per job (named by Job.Name):
//
//	jobs/<name>-<hash>/done/<marker>     one per completed instance
//	jobs/<name>-<hash>/journal/<token>.json  one per submission
//	jobs/<name>-<hash>/lease/<generation>    the job's lease
//	jobs/<name>-<hash>/scripts/<token>.sh    the batch scripts
//	jobs/<name>-<hash>/logs/                 default LogDir
//
// A task whose command exits 0 writes its instance's marker (a temporary
// file renamed into done/, so a marker is whole or absent); a marker's
// name digests the instance's name, the command, Dir and the environment,
// so changed work never counts as done. A submission is journalled (its
// token, array indices, instance names and markers) before sbatch runs,
// and again with the job id sbatch returns; the job's --comment carries
// the token, so a submission whose id was never recorded is found again
// with squeue. Submit, resumed with the same Job, skips instances whose
// marker exists, re-attaches to journalled tasks SLURM still lists as
// pending or running, and submits only the rest. Once every tracked task
// has ended, Submit removes the journal records of the job's current
// instances (records of other work, with other markers, stay until that
// work completes).
//
// One process at a time works on a job: Submit holds the job's lease
// (Locker) for as long as it runs. Leases are files created exclusively
// (link(2), atomic on NFS) that expire unless renewed, so they are safe
// on shared storage where flock is not; after a kill -9 of the holder,
// the next Submit takes the lease over once it has expired
// (WithLeaseTTL, default 30 s).
//
// # Tracking
//
// All Submit calls of a Runner share one tracker: per interval it makes
// one `squeue -r -t all -j <every tracked job>` call, which lists each
// array task's state and exit status, finished ones included for the
// cluster's MinJobAge. Only for jobs squeue no longer lists does it make
// one `sacct` call; where accounting is disabled (no slurmdbd: sacct
// answers "Slurm accounting storage is disabled") it stops asking sacct
// and a task that left the queue counts as COMPLETED when its marker
// exists and as LOST otherwise. The interval starts at the minimum after
// any change and grows by half at each poll without one, up to the
// maximum (WithPollInterval). Stats counts every call.
//
// # Cancellation and failure
//
// When Submit's context is done it cancels (one scancel call) every job
// it submitted or re-attached to, and returns the context's error. An
// instance that ends in another state than COMPLETED (FAILED, TIMEOUT,
// OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, CANCELLED, LOST...) makes Submit
// return a *FailedError with each such instance's state, exit code or
// signal, log path and the end of its log; it has no marker, so the next
// Submit runs it again.
//
// # Concurrency
//
// A Runner is safe for concurrent use by any number of Submit calls, for
// the same or different jobs; calls for the same job (in this process or
// others sharing the state directory) run one after another, each the
// resume of the last. The package never prints and reads no environment
// variables; commands are found on PATH unless WithBinDir says where.
package slurm
