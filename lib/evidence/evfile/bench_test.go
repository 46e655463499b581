package evfile

import (
	"path/filepath"
	"testing"
	"time"

	statepkg "gpuprep/lib/state"
)

// BenchmarkOpenWrite is what a hook pays to keep a job's record: open the
// records' directory (the spool's checks included) and write one record
// (temporary file, ACL, fsync, rename, directory fsync), in a state dir
// on the machine's disk (/tmp, as /var/lib/gpuprep is).
func BenchmarkOpenWrite(b *testing.B) {
	state := filepath.Join(b.TempDir(), "spool")
	sp, err := statepkg.Open(state)
	if err != nil {
		b.Fatal(err)
	}
	if err := sp.AllowTraverse(); err != nil {
		b.Fatal(err)
	}
	sp.Close()
	r := record("4242", 1000, t0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, err := Open(state)
		if err != nil {
			b.Fatal(err)
		}
		r.Job.Start = t0.Add(time.Duration(i%2) * time.Second)
		if _, err := d.Write(r); err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
}
