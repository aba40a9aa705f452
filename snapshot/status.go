package snapshot

import (
	"bytes"
	"io"
)

// Status reads the snapshot at path without restoring it: its header
// (schema version, stores with RVs and object counts, database size) and
// whether its SHA-256 matches its content. It reads the whole file once
// and writes nothing. A checksum mismatch is reported in the Report
// (ChecksumValid false), not as an error; a file that is not a snapshot,
// is truncated, or has an unreadable header is an error (ErrNotSnapshot,
// ErrTruncated, ErrUnsupportedFormat, ErrCorruptSnapshot).
func Status(path string) (Report, error) {
	r, err := openSnapshot(path)
	if err != nil {
		return Report{}, err
	}
	defer r.close()
	recorded, computed, err := r.copyDatabase(io.Discard)
	if err != nil {
		return Report{}, err
	}
	return Report{
		Path:          path,
		Size:          r.size,
		FormatVersion: r.format,
		Header:        r.header,
		Checksum:      hexString(recorded),
		Computed:      hexString(computed),
		ChecksumValid: bytes.Equal(recorded, computed),

		EncryptionRecorded: r.format >= formatKeyIDs,
	}, nil
}
