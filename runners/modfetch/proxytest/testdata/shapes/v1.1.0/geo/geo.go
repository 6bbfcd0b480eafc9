// Package geo measures distances.
package geo
