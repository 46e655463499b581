package prometheus

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// freePort is a TCP port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// daemon is a process the test started; its output goes to log.
type daemon struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs path with args, its output in dir/<name>.log, and kills it
// when the test ends.
func start(t *testing.T, dir, name, path string, args ...string) *daemon {
	t.Helper()
	d := &daemon{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command(path, args...)
	d.cmd.Stdout, d.cmd.Stderr = f, f
	if err := d.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { d.cmd.Wait(); f.Close(); close(d.done) }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.done
	})
	return d
}

// exited says whether the daemon has already exited.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// tail is the end of the daemon's log, for failure messages.
func (d *daemon) tail() string {
	b, _ := os.ReadFile(d.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return fmt.Sprintf("--- %s (%s), last lines:\n%s", d.name, d.log, b)
}

// waitFor polls cond every 200 ms until it is true or the deadline has
// passed; it returns cond's last error (nil when it became true).
func waitFor(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// api is a Prometheus server's HTTP API.
type api struct{ base string }

var httpClient = &http.Client{Timeout: 10 * time.Second}

// sample is one element of an instant vector.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// value is the sample's value as a number.
func (s sample) value() float64 {
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return 0
	}
	return v
}

// query runs expr through /api/v1/query and returns its vector result
// (a scalar comes back as one sample without labels); a PromQL error is
// the error, as Prometheus words it.
func (a api) query(expr string) ([]sample, error) {
	var resp struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := a.get("/api/v1/query?query="+url.QueryEscape(expr), &resp); err != nil {
		return nil, err
	}
	if resp.Status != "success" {
		return nil, fmt.Errorf("%s: %s", resp.ErrorType, resp.Error)
	}
	switch resp.Data.ResultType {
	case "vector":
		var v []sample
		err := json.Unmarshal(resp.Data.Result, &v)
		return v, err
	case "scalar":
		var s sample
		err := json.Unmarshal(resp.Data.Result, &s.Value)
		return []sample{s}, err
	}
	return nil, fmt.Errorf("result type %q, want vector or scalar", resp.Data.ResultType)
}

// rule is one rule of /api/v1/rules.
type rule struct {
	Name           string            `json:"name"`
	Query          string            `json:"query"`
	Type           string            `json:"type"`
	Health         string            `json:"health"`
	LastError      string            `json:"lastError"`
	LastEvaluation time.Time         `json:"lastEvaluation"`
	Annotations    map[string]string `json:"annotations"`
}

// rules lists the loaded rules, every group's.
func (a api) rules() ([]rule, error) {
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			Groups []struct {
				Rules []rule `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := a.get("/api/v1/rules", &resp); err != nil {
		return nil, err
	}
	var out []rule
	for _, g := range resp.Data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// get decodes the JSON at path (Prometheus answers errors with JSON too,
// status 400 or 422).
func (a api) get(path string, v any) error {
	resp, err := httpClient.Get(a.base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: status %s: %w", path, resp.Status, err)
	}
	return nil
}

// ready says whether GET path answers 200.
func (a api) ready(path string) error {
	resp, err := httpClient.Get(a.base + path)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}
