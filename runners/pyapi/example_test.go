package pyapi_test

import (
	"fmt"

	"github.com/lacuna-dev/lacuna/runners/pyapi"
)

func ExampleParamDocs() {
	doc := `Resample a series.

Parameters
----------
rule : str
    The offset string, such as "5min".
closed : {'right', 'left'}, optional
    Which side of the bin interval is closed.`
	for _, p := range pyapi.ParamDocs(doc) {
		fmt.Printf("%s (%s, %s): %s\n", p.Name, p.Type, p.Style, p.Description)
	}
	// Output:
	// rule (str, numpydoc): The offset string, such as "5min".
	// closed ({'right', 'left'}, optional, numpydoc): Which side of the bin interval is closed.
}
