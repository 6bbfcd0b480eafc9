package llm

// StripThink splits a reasoning model's answer into the answer without its
// <think>...</think> blocks and the thinking (an unclosed block runs to the
// end and is all thinking).
func StripThink(text string) (answer, thinking string) {
	panic("llm: not implemented yet")
}

// ExtractCode finds the code in an answer: the fenced block tagged lang (or
// untagged) that looks most like code, several blocks joined when the
// answer splits imports from the body; with no fence, the whole answer.
// how says which ("fence:go", "fences:2", "whole").
func ExtractCode(answer, lang string) (code, how string) {
	panic("llm: not implemented yet")
}
