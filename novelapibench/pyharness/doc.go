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
// arguments, then perturbed ones), each in a process of its own, so a
// solution right by accident on one input, or one that ignores its input,
// fails.
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
// the substitution layer then sees the class behave differently when the
// call's result is substituted, or C1 drops the task (a class target
// constructed on perturbed arguments that behaves as before: one that
// takes none). The steps between the class and the
// one that shows it run when the shown step needs them, or when they bind
// a name the class reads (a default factory or a method reads it when
// called). The prompt quotes the class with the call left out (Site.Class:
// the fields, types and bases are the task's, not the solver's to guess).
// Each variant on each input runs in a process of its own, so solve
// defines the class once per process and a class registry
// (__init_subclass__, SQLAlchemy's declarative base, a name registry)
// never sees a second definition. The example's own input is still run
// again last (Site.Repeats), which UsableInputs then drops (when its
// outcome differs from the first's, it keeps the first input only, not
// Dependent). A target used only as an annotation or a base class
// (pydantic's HttpUrl as a field's type) makes no task: it is never
// called (pydantic builds its instances with __new__), so the spy, which
// counts calls, would see none, the structural layer would fail the
// reference, and the substitution layer, which replaces a call's result,
// could not make the dependence visible.
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
//   - Input: the spy records, for the solution's calls of the target,
//     each call's arguments bound to the target's parameters (defaults
//     applied, so positional and keyword spellings agree) as a canonical
//     text of their values (a list and a tuple alike, 2 and 2.0 alike,
//     an object by its own address-free repr or its attributes, a
//     callable as "callable": function arguments are not compared), and
//     keeps each input's distinct tuples (cut past 64 of them or 10,000
//     calls: then nothing is asserted). The expectation holds the
//     reference's (exactly when its runs agree, in an order-free form
//     with every sequence's items sorted when they differ only in order,
//     else nothing). A solution whose calls receive other data (an extra
//     tuple: made-up data whose result happens to agree) or never the
//     task's (a missing one) fails the input layer.
//   - Substitution: every sample runs again, in processes of its own,
//     with the results of the solution's own calls of the target (the
//     spy's frame attribution) replaced by a different, well-formed value
//     of the same type and shape derived from the real one (the target
//     runs first): an int grows by one (a bool flips), a float or complex
//     by one (nan and inf kept), a string's or bytes' letters and digits
//     shift to the next (z to a, 9 to 0), containers item by item (same
//     length and type, a namedtuple's too; a dict's keys kept), a
//     numeric numpy array by one (dtype and shape kept), an iterator
//     yields perturbed items, an enum member becomes the next of its
//     enum, an object is a copy with its public attributes (else its
//     private ones) perturbed; None, callables and what cannot be copied
//     stay, and an exception is raised unchanged. A result that is one of
//     the arguments (an in-place API returning its input) is perturbed in
//     place. A constructor (a class target's __init__) runs on perturbed
//     copies of its arguments; a function returning None has the
//     arguments it changed perturbed in place, or runs again on perturbed
//     copies when it changed none. The same value always gets the same
//     substitute. Expectation.Dependent names the inputs whose outcome
//     the substitution changes in every reference run (C1 drops a task
//     with none), and Expectation.Substituted what the reference then
//     computes; a solution under the same substitution must compute
//     exactly that. So a throwaway call beside values computed another
//     way (or hard-coded), a guard on the result followed by literals,
//     and a solution that recognises the substituted run and returns
//     anything else all fail; defensive code on the result (if not
//     result: raise, result[0] in a log line, assert result is not None)
//     passes, as a substitute is never a zero value or a mock.
//   - Variants in fresh processes: the normal variant and the substituted
//     one run, each on each input, in a sandboxed process of its own
//     (first every normal one; the substituted ones only when the normal
//     ones ran), so no environment variable, file, module global or
//     counter of one reaches another. Which variant a process runs comes
//     on stdin with the rest of its configuration, read to its end before
//     any of the solution's code runs; argv, the environment and the
//     sandbox's files are the same in every variant. A substituted
//     process that ends without a record loses its outcome (Outcome.Lost),
//     which fails the substitution layer where the reference computed one.
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
//   - Isolation: every process (a sample's variant on one input) runs
//     under runners/sandbox (bubblewrap: no network, its own /tmp and
//     /work, the environment read-only, CPU, memory, process and
//     wall-clock limits), so no process's crash, exit, hang, files or
//     state reaches another; RunAll runs them in parallel and gives each
//     sample the verdict Run gives it alone.
//
// # Integrity and its limits
//
// A process asserts nothing. After setting up (compiling the program,
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
// driver (computing the real value another way, through the library's
// internals or by hand, and comparing it with the target's result to
// learn that the result is substituted, and then inverting the
// substitution). Python code can introspect its interpreter, so
// deliberate code can also find which variant its process runs by
// inspecting the driver (the spy's closure holds the switch); what the
// process and the sandbox expose (the environment, files, module
// globals, counters) no longer tells the variants apart, since each runs
// in a fresh process and sandbox. What it stops are the forgeries a model's code could
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
// its own call count or read the substitution's switch (the substitution
// layer still rejects a forged count unless the solution also computes
// the substituted values); a thread the solution starts may outlive its
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
