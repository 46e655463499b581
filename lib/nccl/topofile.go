package nccl

import (
	"bytes"
	"encoding/xml"
	"fmt"

	"gpuprep/lib/host"
)

// CheckTopoFile reads the NCCL topology file at p (through the root) and
// parses it: XML whose root element is <system>, as NCCL_TOPO_FILE wants.
// It returns the number of CPUs (<cpu>) it describes.
func CheckTopoFile(r host.Root, p string) (cpus int, err error) {
	b, err := r.ReadFile(p)
	if err != nil {
		return 0, err
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if err != nil {
			if root == "" {
				return 0, fmt.Errorf("%s: not an NCCL topology (XML with a <system> root): %v", p, err)
			}
			if err.Error() == "EOF" {
				return cpus, nil
			}
			line, _ := d.InputPos()
			return 0, fmt.Errorf("%s:%d: %v", p, line, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
				if root != "system" {
					return 0, fmt.Errorf("%s: root element <%s>, want <system>", p, root)
				}
			}
			if se.Name.Local == "cpu" {
				cpus++
			}
		}
	}
}
