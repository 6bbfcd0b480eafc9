package shapes

// Stack is a last-in, first-out stack of values of any type.
type Stack[T any] struct {
	items []T
}

// Push puts the value v on top of the stack.
func (s *Stack[T]) Push(v T) { s.items = append(s.items, v) }

// Pop removes and returns the value on top of the stack, and false when the
// stack is empty.
func (s *Stack[T]) Pop() (T, bool) {
	v, ok := s.top()
	if ok {
		s.items = s.items[:len(s.items)-1]
	}
	return v, ok
}

// Len reports how many values the stack holds right now.
func (s *Stack[T]) Len() int { return len(s.items) }

func (s *Stack[T]) top() (T, bool) {
	var zero T
	if len(s.items) == 0 {
		return zero, false
	}
	return s.items[len(s.items)-1], true
}
