package host

import (
	"fmt"
	"strings"
)

// BootIDPath is the kernel's random id of the current boot: it changes at
// every boot, so a value recorded earlier that differs means a reboot.
const BootIDPath = "/proc/sys/kernel/random/boot_id"

// ReadBootID reads /proc/sys/kernel/random/boot_id ("5fdd1806-8066-...").
// An absent file (a fixture root without one) is an error wrapping
// fs.ErrNotExist; anything but one 36-character id is an error naming it.
func ReadBootID(r Root) (string, error) {
	s, err := r.ReadString(BootIDPath)
	if err != nil {
		return "", err
	}
	if len(s) != 36 || strings.Count(s, "-") != 4 || strings.ContainsAny(s, " \t\n") {
		return "", fmt.Errorf("%s: unexpected content %q (want a UUID)", BootIDPath, clip(s))
	}
	return s, nil
}
