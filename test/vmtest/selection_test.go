package vmtest

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"gpuprep/test/vmnode"
)

// selectionConfig lets jobs choose two profiles (copies of the default).
const selectionConfig = BaseConfig + `
[selection]
allowed_profiles = ["*"]

[profiles.viacomment]
inherits = "default"

[profiles.viafeature]
inherits = "default"
`

// TestJobChoosesProfile: a user picks a profile the two ways docs/users.md
// gives, and the prolog of this release's slurmd sees it: --comment
// "gpuprep=NAME" (SLURM_JOB_COMMENT) and --constraint=gpuprep_NAME on a node
// with that feature (SLURM_JOB_CONSTRAINTS). Slurm passes both only when
// the job asked, so only a real slurmd shows they still arrive.
func TestJobChoosesProfile(t *testing.T) {
	vm := Node(t)
	ctx := Ctx(t, 6*time.Minute)
	SetConfig(t, selectionConfig)

	profileOf := func(id int) string {
		t.Helper()
		var rec struct {
			Profile string `json:"profile"`
		}
		record := "/var/lib/gpuprep/job-" + strconv.Itoa(id) + ".json"
		if err := json.Unmarshal([]byte(MustRead(t, ctx, record)), &rec); err != nil {
			t.Fatalf("gpuprep's job record %s: %v", record, err)
		}
		return rec.Profile
	}
	end := func(id int) {
		t.Helper()
		if err := vm.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := vm.WaitJobEnd(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	id := StartSleepJob(t, ctx, "alice", 300, "-c1", "--comment=nightly, gpuprep=viacomment")
	if p := profileOf(id); p != "viacomment" {
		t.Errorf("job with --comment gpuprep=viacomment got profile %q", p)
	}
	end(id)

	// The feature exists on the node only for this test (runtime, not in
	// slurm.conf); a job asking for it could not be scheduled otherwise.
	setFeatures := func(f string) error {
		_, _, err := vm.Run(ctx, "scontrol update NodeName="+vmnode.NodeName+" AvailableFeatures="+f+" ActiveFeatures="+f)
		return err
	}
	if err := setFeatures("gpuprep_viafeature"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := setFeatures(`""`); err != nil {
			t.Logf("taking the node's feature back: %v", err)
		}
	})
	id = StartSleepJob(t, ctx, "alice", 300, "-c1", "--constraint=gpuprep_viafeature")
	if p := profileOf(id); p != "viafeature" {
		t.Errorf("job with --constraint=gpuprep_viafeature got profile %q", p)
	}
	end(id)

	id = StartSleepJob(t, ctx, "alice", 300, "-c1")
	if p := profileOf(id); p != "default" {
		t.Errorf("job asking for nothing got profile %q, want default", p)
	}
}
