package main

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// conffileHeader opens /etc/gpuprep/gpuprep.toml as the packages install it.
const conffileHeader = `# /etc/gpuprep/gpuprep.toml: gpuprep's configuration, read by gpuprep-prolog,
# gpuprep-epilog, gpuprep-health and gpuprep-gres; srunwrap, the fifth
# program, reads the copy the prolog publishes in /run/gpuprep.
#
# As installed, every setting below is commented out: the file sets
# nothing, and the built-in values apply (lib/config/defaults.toml in the
# source; gpuprep.toml(5)). The lines show each key with an example value;
# uncomment and edit the ones you want. The package manager keeps this file
# on upgrade once you have edited it.
#
# Nothing runs until slurm.conf names the hooks:
#   Prolog=/usr/sbin/gpuprep-prolog
#   Epilog=/usr/sbin/gpuprep-epilog
# (/usr/share/doc/gpuprep/examples/slurm.conf.fragment has the rest.)
# Check a change before slurmd runs it:
#   gpuprep-prolog --config /etc/gpuprep/gpuprep.toml --check-config
#
# The example this file was made from follows.
#
`

// commentedConfig returns the packaged gpuprep.toml made from the example
// configuration: the header above, then example with every line that is
// not already a comment or blank commented out ("#" + line), table headers
// included: an empty [profiles.default] would replace the built-in profile.
func commentedConfig(example []byte) ([]byte, error) {
	var out bytes.Buffer
	out.WriteString(conffileHeader)
	sc := bufio.NewScanner(bytes.NewReader(example))
	n := 0
	for first := true; sc.Scan(); first = false {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case first && strings.HasPrefix(line, "# /etc/gpuprep/gpuprep.toml:"):
			// The example's title ("an example that sets every key"):
			// the header above replaces it.
			continue
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			out.WriteString(line)
		default:
			out.WriteString("#" + line)
			n++
		}
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("example configuration: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("example configuration: no setting found")
	}
	return out.Bytes(), nil
}
