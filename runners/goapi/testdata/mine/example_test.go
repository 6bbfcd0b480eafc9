package mine_test

import (
	"fmt"

	"example.com/mine"
	"example.com/mine/geom"
)

func ExampleDouble() {
	fmt.Println(mine.Double(geom.Square(3)))
	// Output: 18
}
