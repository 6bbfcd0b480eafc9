// Package trainingdata holds the node types that turn NovelAPIBench's
// tasks and knowledge bundles into the training data of its parametric
// study (seed §4 and Appendices E.5 to E.7: SFT, RAFT and the knowledge
// editors), one node type per file:
//
//   - task_split: the task-level train/test split (the paper's seeded
//     80/20, or leave-one-library-out), the nested train fractions of the
//     data-scaling probe (12, 25, 50, 100 %) and the uniform samples
//     evaluated on (test_sample30, train_sample150);
//   - sft_data: supervised fine-tuning pairs, the prompt rendered by
//     novelapibench/cells exactly as the generate node renders it for
//     evaluation (same templates, same bundle view), the completion the
//     task's reference answer in the fenced form the templates ask for;
//   - raft_data: RAFT's pairs (Zhang et al. 2024): the oracle bundle among
//     distractor bundles for a fraction P of the questions, distractors
//     alone for the rest;
//   - edit_requests: one locate-then-edit request per API (MEMIT's
//     prompt/subject/target format) for the knowledge editors.
//
// Every output is a Parquet artifact a user can read in DuckDB; every
// selection is a hash of the seed and an id, never a map's or the input's
// order, so the rows are the same on every run and machine.
package trainingdata
