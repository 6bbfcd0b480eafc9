// Package pyharness is NovelAPIBench's execute-then-assert harness for
// Python libraries, the counterpart of goharness where the concepts
// agree: a task format, a driver that runs one sample in a sandboxed
// process with the target-API spy, the harness's layers, the calibration
// mutants, the judge's deterministic fast path and its LLM prompts, and
// C1. It knows nothing
// of the graph: it is given an interpreter, the directories to put on
// sys.path and the host paths to mount read-only (an environment of
// runners/pyenv, a fixture package).
//
// # Tasks
//
// A Task is a program cut from a validated example: a prelude (the
// imports the context's own code uses, helpers, data), then a solver
// function whose body is masked (Context). The solver writes the body,
// import lines included, or a whole definition of the function
// (Program). The prelude never imports the target's package (Validate):
// that import is the solver's, and a wrong one is a WrongImport. The
// harness calls the function on each of Inputs (the example's own
// arguments, then perturbed ones), so a solution right by accident on one
// input, or one that ignores its input, fails.
//
// Cut makes the tasks of a validated example (runners/pyapi's Doctests and
// DocFileExamples: a doctest, or a fenced Python block with its "#> "
// output), graded as goharness grades them: easy (the call's statement,
// with the package code building what it is called on), medium (also the
// data set up before it), hard (the whole example, when it composes the
// call with others of the package). A call inside a top-level for, with,
// if or try statement takes the whole statement as its statement,
// returning the list of what it prints (skipped when a print there has a
// keyword, a starred argument or none, or when it loops over a set, whose
// order PYTHONHASHSEED changes), or else the variable of solve's it
// assigns on every path that a later step shows (never a comprehension's,
// a handler's or a loop's target; a try's body's only when every handler
// that does not re-raise assigns it too, or an input the call refuses
// would expect an UnboundLocalError; skipped when no step shows one); a
// variable it reads before it rebinds it moves its binding into the body.
// A
// call in the body of a class the example defines (a field's default, an
// Annotated metadata, a method's decorator) takes the class statement:
// solve defines the class with the call, then returns what the example's
// later steps show of it (a validation's result, the error a try prints),
// never the class object, which the driver describes by its name alone;
// the mock layer then sees the class behave differently when the call is
// answered by a mock, or C1 drops the task (a class target whose
// uninitialised instance behaves as an initialised one; pydantic's
// FailFast is kept: pydantic reads the metadata's instance attributes,
// which an uninitialised one lacks). The steps between the class and the
// one that shows it run when the shown step needs them, or when they bind
// a name the class reads (a default factory or a method reads it when
// called). The prompt quotes the class with the call left out (Site.Class:
// the fields, types and bases are the task's, not the solver's to guess).
// Limit: solve defines the class on every call, for every input, in the
// real pass and again in the mock pass of one process; a class registry
// (__init_subclass__, SQLAlchemy's declarative base, a name registry) may
// refuse or change a second definition. The example's own input is run
// again last (Site.Repeats): when its outcome differs from the first's,
// UsableInputs keeps the first input only, not Dependent (the mock pass
// ran on a later definition). A registry that changes only the mocked
// pass, or only values that vary from run to run, goes unseen. A target used
// only as an annotation or a base class (pydantic's HttpUrl as a field's
// type) makes no task: it is never called (pydantic builds its instances
// with __new__), so the spy, which counts calls, would see none, the
// structural layer would fail the reference, and the mock layer, which
// replaces a call's result, could not make the dependence visible.
// Literal arguments become solve's parameters (a class's, and those of the
// example's calls of the class), and a perturbed input follows the
// example's own. An example or a level that cannot be cut is a Skip with
// its reason. Describe writes the task's prompt without the target's name.
//
// # What a verdict rests on
//
//   - The spy. Before any solution code runs, the driver imports the
//     target's defining module and the modules of all its public paths,
//     then replaces every alias of the target across sys.modules: each
//     module attribute that is the object, and each attribute of a class
//     of a loaded module that is it (or a staticmethod or classmethod of
//     it). A class target is instrumented in place (its __init__), so
//     isinstance and every alias keep working. A call counts as the
//     solver's (Record.Direct) only when the calling frame is the
//     solution's file and lines (Program's range): the library calling
//     the target internally, the prelude, and the harness do not count.
//     C functions create no frame, so the target passed as a callback to
//     map or sorted counts as called by the solution.
//   - Structural: the solution's own lines called the target at least
//     once; the shapes of the calls (positional count, keywords) are kept
//     as evidence for the judge.
//   - Comparative: each input's outcome equals the reference's: values are
//     described by the driver (kind, type, content; numpy arrays with
//     dtype and shape; a dict's items in the order of their keys, as ==
//     ignores order; an Enum member by its name and value; an object by
//     its public attributes, or its private ones when it has no public
//     one, and by its repr when its type has a repr of its own without
//     an address in it: datetime, Decimal, Fraction, Path) and compared
//     in lacuna's process, floats within RelTol and AbsTol; an exception
//     is compared by its type. The expected values never enter the
//     process a solution runs in.
//   - Mock-based: every sample runs twice in its process, the second time
//     with the solution's own calls of the target answered by a
//     unittest.mock.MagicMock (for a class: the instance left
//     uninitialised), its body not run. Expectation.Dependent names the
//     outcomes of the reference that this changes; a solution must change
//     each of them too, so a throwaway call beside values computed
//     another way (or hard-coded) fails. A raise under the mock counts as
//     a change. Both passes run in the sample's one process, each in a
//     fresh namespace: module-level state of the library that the real
//     pass changed is still changed in the mock pass.
//   - Stable expectations (Derive): the reference runs in several
//     processes (hash randomisation differs); each part of a value where
//     the runs disagree (a leaf, or a container whose length differs; a
//     repr that differs is dropped) is asserted by its kind and type
//     only, a part whose kind or type differs not at all, the rest
//     exactly. A list or set is a collection of like items: one item
//     that varies makes all vary (their order does), none asserted when
//     the items are of several kinds or types. So a random function's
//     reference passes its own expectation in a later run too, and C1
//     decides on the stable parts.
//   - Isolation: every sample runs in a process of its own under
//     runners/sandbox (bubblewrap: no network, its own /tmp and /work,
//     the environment read-only, CPU, memory, process and wall-clock
//     limits), so no sample's crash, exit, hang, files or state reaches
//     another; RunAll runs them in parallel and gives each the verdict Run
//     gives it alone.
//
// # Integrity and its limits
//
// The process asserts nothing. After setting up (compiling the program,
// importing the target, installing the spy) it forks. The parent holds
// the key, never runs a line of the solution and never shares memory with
// it: it reads the key from descriptor 7 only after the child has ended,
// and writes one record, signed with HMAC-SHA256, to descriptor 8. So a
// record verifies only if the parent wrote it, and what the parent
// observes itself is the solution's out of reach: that the child ended
// without reporting (no record: a crash), or that its report does not
// start with the nonce the child inherited (tampered). What the process
// prints decides nothing; any other data on descriptor 8, or a record
// that fails authentication, is tampering.
//
// The child reports the outcomes. It runs the solver in a thread of its
// own, so the solver's frames never lead to the main thread's, which hold
// the nonce and the report; from the moment that thread starts, the main
// thread calls only C functions and builtins it captured in locals before
// (a _thread lock, not Thread.join; _json's C encoder, not json.dumps), and
// copies what the solver's thread left behind keeping only exact JSON
// types: a solution that replaces a module's function, a class's method,
// a builtin or the driver's globals changes nothing the reporting runs.
// An audit hook (PEP 578; it cannot be removed) refuses, from the first
// pass on and in every thread: the garbage collector's object walks,
// other threads' frames, trace and profile hooks, new audit hooks, any
// path into /proc or to /dev/mem (the process's memory and descriptors:
// the hook resolves each path itself, against the working directory,
// "." and ".." and every symbolic link followed with the posix functions
// it captured, so //proc, /./proc, a link to /proc and /dev/fd/N are
// /proc; a relative path with a component named proc is refused whatever
// it is relative to, since no audit event carries dir_fd), ctypes, and
// starting or signalling processes (fork, exec, spawn, system,
// subprocess, kill). _posixsubprocess.fork_exec starts a process without
// an audit event (subprocess raises its own through its module's sys,
// which a solution can replace): once armed, the driver replaces it, in
// _posixsubprocess and subprocess, by a refusal, and refuses a fresh
// import of _posixsubprocess.
//
// Beneath the hook, the operating system keeps the key: the driver makes
// itself not dumpable (prctl PR_SET_DUMPABLE 0) before it reads anything,
// and fails closed when it cannot, and the child it forks inherits that.
// A process of the same user, such as one a solution started by a route
// the hook missed, can then neither copy the parent's descriptors
// (pidfd_getfd: EPERM) nor open its /proc files nor ptrace it.
// TestSolutionsCannotReachTheKeyOrTheirMemory runs each route (a helper
// started through fork_exec or a silenced subprocess that copies
// descriptor 7 with pidfd_getfd; /proc reached by //proc, /./proc, dir_fd,
// a symbolic link and /dev/fd); with the hook's refusal of fork_exec
// taken out by hand, the helper's pidfd_getfd fails with EPERM, and with
// neither it read the key.
//
// Python cannot hide an object from code in the same interpreter, so the
// child's report is only as trustworthy as its main thread is out of the
// solution's reach. Code written against this driver can still get its
// own code run there: a signal handler (Python runs them in the main
// thread, handed its frame), a finaliser or a gc.callbacks entry run by a
// collection the main thread's allocations start. Such code can choose
// the child's report, never the key. The harness makes no stronger claim
// because it needs none: deliberate code can pass without touching the
// driver (a throwaway call of the target, and a different value when the
// result is a mock). What it stops are the forgeries a model's code could
// make by accident or by a simple trick (printing a verdict, writing to a
// descriptor, exiting early with 0, os._exit, unwrapping or replacing the
// spy, calling the target only through the library, patching what the
// driver calls) and every route to the key we know of. What remains: the
// threat model is a solution that runs as the sandbox's user inside the
// sandbox, not one that exploits the kernel or the interpreter (a memory
// corruption in a C extension module could read the child's nonce); a
// process a solution starts by a route not listed here runs outside the
// hook (it cannot take the key, and the sandbox ends it with the
// sample). Other known limits: the spy's
// state is reachable through its __closure__, so a solution can raise
// its own call count (the mock layer still rejects it unless it also
// detects the mock pass); a thread the solution starts may outlive its
// pass; a library that imports ctypes or starts processes lazily during
// the solution fails there (the target's modules are imported before the
// guard is armed). The paper says it too: the harness is not a security
// boundary; the sandbox is.
//
// Without bubblewrap, runners/sandbox applies resource limits only:
// samples share /tmp and the host's file system.
//
// # The judge's fast path
//
// Judge assigns OK, WrongSyntax (SyntaxError compiling the program),
// WrongImport (ImportError, ModuleNotFoundError raised by the program's
// own code or for a module of the target's package; the package or the
// target's name used without an import; the target's name looked up on a
// wrong module of its package), WrongAPISelection (another name looked up
// on a module of the target's package; the program ran, never called the
// target and never names it), NotRun (not a failure class: the
// environment or the target did not load, the task's fault, nothing to
// ask the LLM judge), and leaves the rest undecided, with the
// evidence, for the LLM judge: an import failing inside a library for
// another module (an optional dependency the environment lacks) among
// them. An exception the reference raised on the same input counts for
// none of these rules.
//
// JudgePrompt is the LLM judge's prompt for those (the six classes
// worded for Python, goharness's schema and parser), SemPrompt the
// semantic-equivalence prompt; TargetCalls and ParamCorr match the
// solution's calls of the target with the reference's first, argument
// by argument, lexically in lacuna's process (f-string fields read as
// code; a call of the name passed as a value, as map(scale, xs), is not
// seen).
// Calibrate runs the mutants (Mutants), AuditMutant says how the harness
// and the fast path took each (of a mutant run elsewhere too: nodes/tasks
// runs them as solve samples, MutantOf reading one back), and C1 keeps a
// task only when the reference passes, some outcome depends on the
// target, and every mutant is rejected with its fast-path class.
// ExpectedClass is the class each kind stands for by construction, which
// the judge's calibration measures the LLM judge and the fallback against.
package pyharness
