package cli

import (
	"io"

	"gpuprep/lib/cmdenv"
)

// WriteJSON is cmdenv.WriteJSON: indented JSON and a newline.
func WriteJSON(w io.Writer, v any) error { return cmdenv.WriteJSON(w, v) }
