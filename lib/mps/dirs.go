package mps

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"gpuprep/lib/textfmt"
)

// DefaultBase is the node directory that holds one directory per control
// daemon, <user>-<key>/{pipe,log}. /run is a tmpfs: a reboot, which ends
// every daemon, empties it too.
const DefaultBase = "/run/gpuprep/mps"

// maxPipeDir bounds the pipe directory's length: MPS makes UNIX sockets in
// it, and a socket's path (sun_path) holds at most 107 bytes; 80 leaves
// room for the daemon's and servers' socket names.
const maxPipeDir = 80

// maxUser bounds the user part of a daemon's directory name (useradd's
// limit is 32 bytes).
const maxUser = 32

// echoMax is how much of a name or UUID a message quotes: they come from
// the job's environment.
const echoMax = 64

// Paths are one daemon's directories on this machine.
type Paths struct {
	Dir  string // <base>/<user>-<key>
	Pipe string // <Dir>/pipe: CUDA_MPS_PIPE_DIRECTORY
	Log  string // <Dir>/log: CUDA_MPS_LOG_DIRECTORY
}

// Key names a GPU set: the first 12 hex digits of the SHA-256 of the UUIDs
// joined by commas, in the order given (the order of CUDA_VISIBLE_DEVICES,
// which numbers the clients' devices: pass the job's GPUs in index order).
// UUIDs are GPU-... or MIG-... as NVML and nvidia-smi print them; an
// empty list, an empty or repeated UUID, or one with a comma, a slash or
// white space is an error.
func Key(uuids []string) (string, error) {
	if len(uuids) == 0 {
		return "", fmt.Errorf("mps: no GPU UUIDs")
	}
	seen := make(map[string]bool, len(uuids))
	for _, u := range uuids {
		if err := checkUUID(u); err != nil {
			return "", err
		}
		if seen[u] {
			return "", fmt.Errorf("mps: GPU UUID %q given twice", textfmt.Clip(u, echoMax))
		}
		seen[u] = true
	}
	sum := sha256.Sum256([]byte(strings.Join(uuids, ",")))
	return hex.EncodeToString(sum[:6]), nil
}

// checkUUID accepts GPU-<hex and dashes> and MIG-<...> (MIG UUIDs are
// MIG-<uuid> since R470, MIG-GPU-<uuid>/<gi>/<ci> before).
func checkUUID(u string) error {
	if !strings.HasPrefix(u, "GPU-") && !strings.HasPrefix(u, "MIG-") {
		return fmt.Errorf("mps: GPU UUID %q: want GPU-... or MIG-...", textfmt.Clip(u, echoMax))
	}
	if len(u) > 128 || strings.ContainsAny(u, ", \t\n\r") {
		return fmt.Errorf("mps: GPU UUID %q: unexpected characters", textfmt.Clip(u, echoMax))
	}
	return nil
}

// Dirs returns the directories of user's daemon for the GPU set key (from
// Key) under base, a directory on this machine (DefaultBase on a node,
// host.Root.Path of it on a fixture): <base>/<user>-<key>/pipe and /log.
// user must be a plain name (no slash, no white space, not starting with
// a dot or a dash, at most 32 bytes) and key 12 lowercase hex digits; a
// pipe directory longer than 80 bytes is refused (UNIX socket paths).
func Dirs(base, user, key string) (Paths, error) {
	if !filepath.IsAbs(base) || filepath.Clean(base) != base {
		return Paths{}, fmt.Errorf("mps: base %q: want a clean absolute path", base)
	}
	if err := checkUser(user); err != nil {
		return Paths{}, err
	}
	if len(key) != 12 || strings.Trim(key, "0123456789abcdef") != "" {
		return Paths{}, fmt.Errorf("mps: key %q: want 12 lowercase hex digits (Key)", key)
	}
	dir := filepath.Join(base, user+"-"+key)
	p := Paths{Dir: dir, Pipe: filepath.Join(dir, "pipe"), Log: filepath.Join(dir, "log")}
	if len(p.Pipe) > maxPipeDir {
		return Paths{}, fmt.Errorf("mps: pipe directory %s is %d bytes, over %d (MPS makes UNIX sockets in it)", p.Pipe, len(p.Pipe), maxPipeDir)
	}
	return p, nil
}

// checkUser accepts a user name usable as part of one path component.
func checkUser(user string) error {
	switch {
	case user == "":
		return fmt.Errorf("mps: empty user name")
	case len(user) > maxUser:
		return fmt.Errorf("mps: user name %q is %d bytes, over %d", textfmt.Clip(user, echoMax), len(user), maxUser)
	case user[0] == '.' || user[0] == '-':
		return fmt.Errorf("mps: user name %q starts with %q", textfmt.Clip(user, echoMax), user[0])
	}
	for _, c := range user {
		if c <= ' ' || c == '/' || c == 0x7f || c > 0x7e {
			return fmt.Errorf("mps: user name %q: unexpected character %q", textfmt.Clip(user, echoMax), c)
		}
	}
	return nil
}
