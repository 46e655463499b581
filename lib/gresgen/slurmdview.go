package gresgen

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/slurm"
)

// SlurmdView is what slurmd on the node will count as sockets, as the
// SlurmdParameters of its slurm.conf say.
type SlurmdView struct {
	// Sockets is SocketsL3 with l3cache_as_socket, else SocketsNUMA with
	// numa_node_as_socket, else SocketsReal (also when no slurm.conf was
	// found or read).
	Sockets SocketView `json:"sockets"`
	// Conf is the slurm.conf read; "" when none was found.
	Conf string `json:"conf,omitempty"`
	// Where is where SlurmdParameters is set ("/etc/slurm/slurm.conf:12"),
	// "" when slurm.conf does not set it.
	Where string `json:"where,omitempty"`
	// Parameters is SlurmdParameters' value as written.
	Parameters string `json:"parameters,omitempty"`
	// Problem says why slurm.conf could not be read; Sockets is then
	// SocketsReal and the output warns.
	Problem string `json:"problem,omitempty"`

	conf *slurm.Conf // the slurm.conf read, for its NodeName= line
}

// ReadSlurmdView reads the slurm.conf that slurmd on the node reads and says
// what slurmd will count as sockets. file, when not "", is a slurm.conf on
// this machine (--slurm-conf) read in place of the node's; a problem reading
// it is an error. Otherwise slurm.LocateConf finds the node's under r
// (slurmConfEnv is SLURM_CONF's value: the file it names, else
// /etc/slurm/slurm.conf, else the configless copy under /run/slurm/conf),
// Include lines followed; none there is real sockets, what `slurmd -C` and
// slurmd without those SlurmdParameters count, and a file that cannot be read
// is real sockets with Problem set.
func ReadSlurmdView(r host.Root, slurmConfEnv, file string) (*SlurmdView, error) {
	if file != "" {
		conf, err := slurm.ReadConf(host.NewRoot("/"), file)
		if err != nil {
			return nil, fmt.Errorf("--slurm-conf %s: %w", file, err)
		}
		return viewOf(conf), nil
	}
	name, err := slurm.LocateConf(r, slurmConfEnv)
	if errors.Is(err, fs.ErrNotExist) {
		return &SlurmdView{Sockets: SocketsReal}, nil
	}
	if err != nil {
		return &SlurmdView{Sockets: SocketsReal, Problem: err.Error()}, nil
	}
	conf, err := slurm.ReadConf(r, name)
	if err != nil {
		return &SlurmdView{Sockets: SocketsReal, Conf: name, Problem: err.Error()}, nil
	}
	return viewOf(conf), nil
}

// viewOf reads SlurmdParameters as slurmd does: l3cache_as_socket wins over
// numa_node_as_socket.
func viewOf(conf *slurm.Conf) *SlurmdView {
	v := &SlurmdView{Sockets: SocketsReal, Conf: conf.File, conf: conf}
	if p, ok := conf.Get("SlurmdParameters"); ok {
		v.Parameters, v.Where = p, conf.Where("SlurmdParameters")
	}
	switch {
	case conf.HasSlurmdParameter(string(SocketsL3)):
		v.Sockets = SocketsL3
	case conf.HasSlurmdParameter(string(SocketsNUMA)):
		v.Sockets = SocketsNUMA
	}
	return v
}

// reason says what decided v, for the output: the slurm.conf and the line
// setting SlurmdParameters, or that none was found or read.
func (v *SlurmdView) reason() string {
	switch {
	case v == nil:
		return "slurm.conf not read"
	case v.Problem != "":
		return "slurm.conf could not be read (" + v.Problem + ")"
	case v.Conf == "":
		return fmt.Sprintf("no slurm.conf found (SLURM_CONF is not set; neither %s nor %s exists)", slurm.DefaultConfFile, slurm.ConfiglessConfFile)
	case v.Sockets != SocketsReal:
		return fmt.Sprintf("%s sets SlurmdParameters=%s", v.Where, v.Parameters)
	case v.Where != "":
		return fmt.Sprintf("%s sets SlurmdParameters=%s, without numa_node_as_socket or l3cache_as_socket", v.Where, v.Parameters)
	}
	return v.Conf + " sets no SlurmdParameters"
}

// found says whether a slurm.conf was read.
func (v *SlurmdView) found() bool { return v != nil && v.Conf != "" && v.Problem == "" }

// confName names the slurm.conf to change: the one read, else "slurm.conf".
func (v *SlurmdView) confName() string {
	if v.found() {
		return v.Conf
	}
	return "slurm.conf"
}

// howTo says how to make slurmd count view: the SlurmdParameters line to
// write in the slurm.conf read.
func (v *SlurmdView) howTo(view SocketView) string {
	params := string(view)
	if v.found() && v.Parameters != "" {
		var keep []string
		for _, p := range strings.Split(v.Parameters, ",") {
			if lp := strings.ToLower(strings.TrimSpace(p)); lp != "" && lp != string(SocketsNUMA) && lp != string(SocketsL3) {
				keep = append(keep, strings.TrimSpace(p))
			}
		}
		if view != SocketsReal {
			keep = append(keep, string(view))
		}
		params = strings.Join(keep, ",")
		if params == "" {
			return fmt.Sprintf("remove SlurmdParameters at %s", v.Where)
		}
		return fmt.Sprintf("set SlurmdParameters=%s at %s", params, v.Where)
	}
	if view == SocketsReal {
		return "leave " + string(SocketsNUMA) + " and " + string(SocketsL3) + " out of SlurmdParameters in " + v.confName()
	}
	return fmt.Sprintf("set SlurmdParameters=%s in %s", params, v.confName())
}
