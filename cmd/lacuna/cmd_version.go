package main

import (
	"context"
	"fmt"

	"github.com/lacuna-dev/lacuna/engine"
)

var cmdVersion = newCommand("version", "", "print the version", "")

func init() {
	cmdVersion.Run = func(context.Context, *Command, []string) error {
		fmt.Println("lacuna", engine.Version)
		return nil
	}
}
