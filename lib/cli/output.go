package cli

import (
	"encoding/json"
	"io"
)

// WriteJSON prints v as indented JSON (two spaces) and a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
