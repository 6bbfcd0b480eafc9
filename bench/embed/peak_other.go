//go:build !amd64

package main

// fmaLoop has no loop off amd64: no peak is measured.
func fmaLoop(lanes int) (func(int), float64) { return nil, 0 }

// features lists nothing off amd64.
func features() []string { return nil }
