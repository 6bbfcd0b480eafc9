package pyapi

import (
	"reflect"
	"testing"
)

func TestParamDocsParsesEachStyle(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []ParamDoc
	}{
		{
			name: "numpydoc",
			doc: `Resample a series.

Parameters
----------
rule : str
    The offset string, such as "5min".
x, y : array_like, optional
    Coordinates.

    Second paragraph.
*args
    Passed on.
**kwargs : dict
    Extra options.

Returns
-------
Series
    The resampled series.`,
			want: []ParamDoc{
				{Name: "rule", Type: "str", Description: `The offset string, such as "5min".`, Style: "numpydoc"},
				{Name: "x", Type: "array_like, optional", Description: "Coordinates.\n\nSecond paragraph.", Style: "numpydoc"},
				{Name: "y", Type: "array_like, optional", Description: "Coordinates.\n\nSecond paragraph.", Style: "numpydoc"},
				{Name: "args", Description: "Passed on.", Style: "numpydoc"},
				{Name: "kwargs", Type: "dict", Description: "Extra options.", Style: "numpydoc"},
			},
		},
		{
			name: "google",
			doc: `Fetch rows.

Args:
    table (str): The table
        to read from.
    limit: How many rows.
    *columns: Which columns.

Keyword Args:
    timeout (float, optional): Seconds to wait.

Returns:
    list: The rows.`,
			want: []ParamDoc{
				{Name: "table", Type: "str", Description: "The table to read from.", Style: "google"},
				{Name: "limit", Description: "How many rows.", Style: "google"},
				{Name: "columns", Description: "Which columns.", Style: "google"},
				{Name: "timeout", Type: "float, optional", Description: "Seconds to wait.", Style: "google"},
			},
		},
		{
			name: "sphinx",
			doc: `Send a request.

:param url: Where to send it,
    with the scheme.
:type url: str
:param int retries: How often to retry.
:keyword timeout: Seconds.

:returns: The response.
:rtype: Response`,
			want: []ParamDoc{
				{Name: "url", Type: "str", Description: "Where to send it, with the scheme.", Style: "sphinx"},
				{Name: "retries", Type: "int", Description: "How often to retry.", Style: "sphinx"},
				{Name: "timeout", Description: "Seconds.", Style: "sphinx"},
			},
		},
		{
			name: "no parameters section",
			doc:  "Return twice the number x.\n\n>>> double(2)\n4",
		},
		{
			name: "a Parameters heading in prose is not a numpydoc section",
			doc:  "Parameters\nare described elsewhere: see the guide.",
		},
		{
			name: "numpydoc section ends at a directive",
			doc: `Do it.

Parameters
----------
n : int
    How many.

.. versionadded:: 2.0`,
			want: []ParamDoc{{Name: "n", Type: "int", Description: "How many.", Style: "numpydoc"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParamDocs(tc.doc)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestDocWordsLeavesOutDoctests(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want int
	}{
		{"", 0},
		{"Nothing.", 1},
		{"Return twice the number x.\n\n>>> double(2)\n4\n>>> double(\n...     3)\n6\n\nFor any number.", 8},
		{">>> f()\n1", 0},
	} {
		if got := DocWords(tc.doc); got != tc.want {
			t.Errorf("DocWords(%q) = %d, want %d", tc.doc, got, tc.want)
		}
	}
}
