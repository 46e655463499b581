package hookcmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// reportDirExists checks --report's state dir (--state-dir when fromFlag,
// else the config's general.state_dir): a directory that does not exist is
// bad input, most likely a mistyped path, not a node with no drift; the
// error names it and where it came from. A dry run still takes an absent
// spool as empty.
func reportDirExists(dir string, fromFlag bool) error {
	_, err := os.Stat(dir)
	if err == nil {
		return nil
	}
	by := "general.state_dir"
	if fromFlag {
		by = "--state-dir"
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state dir %s (%s) does not exist: no prolog has kept a spool there", dir, by)
	}
	return nil // state.OpenReadOnly reports anything else, naming the dir
}
