package evidence

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// JobView is a job's evidence over all its nodes: a multi-node job has
// one Record per node.
type JobView struct {
	Job   string   `json:"job"`   // the job id
	Parts []Record `json:"parts"` // one a node (and start), sorted by node
	// Total is summed over every part's GPUs as Diff sums one node's;
	// Seconds is the longest part's. A part with no figures yet (running,
	// no end snapshot) makes every figure but the errors unknown.
	Total *Total `json:"total"`
}

// Merge is the view of one job's records: parts must all be of one job id
// (an error names the ids otherwise). Of parts with the same node and
// start, one is kept: a finished one before a running one, else the one
// that ends last. The parts are sorted by node, then start.
func Merge(parts []Record) (JobView, error) {
	if len(parts) == 0 {
		return JobView{}, errors.New("no records to merge")
	}
	var ids []string
	for _, p := range parts {
		if !slices.Contains(ids, p.Job.ID) {
			ids = append(ids, p.Job.ID)
		}
	}
	if len(ids) > 1 {
		slices.Sort(ids)
		return JobView{}, fmt.Errorf("records of %d jobs, not one: %s", len(ids), strings.Join(ids, ", "))
	}
	kept := dedupe(parts)
	slices.SortStableFunc(kept, func(a, b Record) int {
		return cmp.Or(strings.Compare(a.Job.Node, b.Job.Node), a.Job.Start.Compare(b.Job.Start))
	})
	return JobView{Job: ids[0], Parts: kept, Total: mergeTotal(kept)}, nil
}

// dedupe keeps one record of each node and start, the one better picks,
// in the order first met.
func dedupe(parts []Record) []Record {
	type key struct {
		node  string
		start time.Time
	}
	at := map[key]int{}
	var out []Record
	for _, p := range parts {
		k := key{p.Job.Node, p.Job.Start.UTC()}
		i, ok := at[k]
		switch {
		case !ok:
			at[k] = len(out)
			out = append(out, p)
		case better(p, out[i]):
			out[i] = p
		}
	}
	return out
}

// better says whether record a says more than b of the same node and
// start: a is finished and b is not, or it ends later.
func better(a, b Record) bool {
	if a.Running != b.Running {
		return !a.Running
	}
	if a.End == nil || b.End == nil {
		return b.End == nil && a.End != nil
	}
	return a.End.Time.After(b.End.Time)
}

// mergeTotal is the total over every part's GPUs.
func mergeTotal(parts []Record) *Total {
	var gs []GPUResult
	var wall float64
	for _, p := range parts {
		gs = append(gs, p.GPUs...)
		if p.Total != nil {
			wall = max(wall, p.Total.Seconds)
		}
	}
	t := sumTotal(gs, wall)
	for _, p := range parts {
		if p.Total == nil {
			t.EnergyJ, t.EnergyKWh, t.MeanPowerW, t.Throttle = nil, nil, nil, nil
			t.Unknown = append(t.Unknown, "every figure on "+p.Job.Node+": no end snapshot yet")
		}
	}
	return t
}
