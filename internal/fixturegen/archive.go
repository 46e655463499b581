package fixturegen

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"time"

	"gpuprep/internal/nodeshape"
)

// archiveTime is every entry's modification time, so that archives depend
// only on their content.
var archiveTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// WriteArchive writes the root of shape s as a .tar.gz to w. The archive is
// deterministic: entries sorted by path (parents first), fixed times, owner
// and modes, symlinks kept as (relative) links, no gzip name or time.
func WriteArchive(s nodeshape.Shape, w io.Writer) error {
	t, err := build(s)
	if err != nil {
		return err
	}
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, p := range t.paths() {
		e := t.entries[p]
		h := &tar.Header{
			Name:    p,
			ModTime: archiveTime,
			Uname:   "root",
			Gname:   "root",
		}
		switch e.kind {
		case kindDir:
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, p+"/", 0o755
		case kindFile:
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(e.data))
		case kindLink:
			h.Typeflag, h.Mode, h.Linkname = tar.TypeSymlink, 0o777, e.target
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if e.kind == kindFile {
			if _, err := tw.Write(e.data); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
