package gotool

// UnitFile is the name of unit i's file in its package directory: a
// harness that attributes calls by their caller's file names it so.
func UnitFile(i int) string { return unitFile(i) }
