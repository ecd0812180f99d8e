package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// An archive sandboxd keeps holds what the workspace holds, not more: a
// sparse file goes in as its data runs alone, with a PAX record of its
// own (sparseRecord: its size and where each run goes), and the second
// name of a file as a hard link to the first. Extraction writes each run
// where it goes and sets the size, so the holes come back as holes in no
// more time than the data takes. (GNU tar's sparse format would make
// Go's reader read every hole as zeros: a small archive of a terabyte
// of holes would take the supervisor hours.)

// sparseRecord is the PAX record of a sparse file: "SIZE;OFF:LEN,...".
const sparseRecord = "SANDBOXD.sparse"

// maxRuns bounds the data runs a sparse file is archived with; one with
// more goes in whole (and an archive over its room is refused).
const maxRuns = 4096

// segment is a run of a sparse file's data: where it starts, how long.
type segment struct{ off, n int64 }

// placed is what the archive makes of one regular file.
type placed struct {
	linkTo string    // the archive name of its first name, for a second one
	sparse bool      // it holds less than its size:
	data   []segment // its data runs (none for a file of holes alone)
}

// fileID names a file across its names.
type fileID struct{ dev, ino uint64 }

// dataRuns are f's data runs, by SEEK_DATA and SEEK_HOLE, up to size.
func dataRuns(f *os.File, size int64) ([]segment, error) {
	var out []segment
	fd := int(f.Fd())
	for off := int64(0); off < size; {
		start, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, syscall.ENXIO) {
			break // only a hole to the end
		}
		if err != nil {
			return nil, err
		}
		if start >= size {
			break
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return nil, err
		}
		end = min(end, size)
		out = append(out, segment{start, end - start})
		off = end
	}
	return out, nil
}

// Where the kernel cannot say where a file's data is (gVisor has no
// SEEK_DATA, and counts every byte as allocated), files from scanFrom up
// to scanUpTo bytes are read for their holes, a zeroBlock at a time;
// larger ones go in whole (an archive over its room is refused).
const (
	scanFrom  = 1 << 20
	scanUpTo  = 16 << 30
	zeroBlock = 64 << 10
)

// zeroRuns are f's runs of data, holes being whole zeroBlocks of zeros.
func zeroRuns(f *os.File, size int64) ([]segment, error) {
	var runs []segment
	buf := make([]byte, zeroBlock)
	for off := int64(0); off < size; off += zeroBlock {
		n, err := f.ReadAt(buf[:min(zeroBlock, size-off)], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if n == 0 || bytes.Count(buf[:n], []byte{0}) == n {
			continue
		}
		if k := len(runs) - 1; k >= 0 && runs[k].off+runs[k].n == off {
			runs[k].n += int64(n)
		} else {
			runs = append(runs, segment{off, int64(n)})
		}
		if len(runs) > maxRuns {
			return runs, nil
		}
	}
	return runs, nil
}

// sparseSize is the bytes a sparse file's runs take in the archive.
func sparseSize(runs []segment) int64 {
	var n int64
	for _, r := range runs {
		n += r.n
	}
	return n
}

// writeSparse writes a sparse file (hdr as for the whole file) as its
// runs, read with read, each as long as it was when the archive was
// sized.
func writeSparse(tw *tar.Writer, hdr *tar.Header, runs []segment, read func(segment) io.Reader) error {
	var rec strings.Builder
	rec.WriteString(strconv.FormatInt(hdr.Size, 10) + ";")
	for i, r := range runs {
		if i > 0 {
			rec.WriteByte(',')
		}
		fmt.Fprintf(&rec, "%d:%d", r.off, r.n)
	}
	h := *hdr
	h.Size = sparseSize(runs)
	h.PAXRecords = map[string]string{sparseRecord: rec.String()}
	if err := tw.WriteHeader(&h); err != nil {
		return err
	}
	for _, r := range runs {
		if _, err := io.CopyN(tw, read(r), r.n); err != nil {
			return err
		}
	}
	return nil
}

// sparseRuns reads a sparse file's record: its size and runs, which must
// be in order, apart, within the size and as long together as the data
// the archive holds for it.
func sparseRuns(rec string, data int64) (size int64, runs []segment, err error) {
	bad := fmt.Errorf("a sparse file's record %.64q is not one sandboxd writes", rec)
	head, list, ok := strings.Cut(rec, ";")
	if size, err = strconv.ParseInt(head, 10, 64); !ok || err != nil || size < 0 {
		return 0, nil, bad
	}
	var end, total int64
	for _, item := range strings.Split(list, ",") {
		if item == "" {
			continue
		}
		o, n, ok := strings.Cut(item, ":")
		off, err1 := strconv.ParseInt(o, 10, 64)
		length, err2 := strconv.ParseInt(n, 10, 64)
		if !ok || err1 != nil || err2 != nil || off < end || length < 0 || off > size-length || len(runs) >= maxRuns {
			return 0, nil, bad
		}
		runs = append(runs, segment{off, length})
		end, total = off+length, total+length
	}
	if total != data {
		return 0, nil, bad
	}
	return size, runs, nil
}

// writeRuns writes a sparse file's runs from r where they go in f, and
// gives f its size.
func writeRuns(f *os.File, r io.Reader, size int64, runs []segment) error {
	for _, run := range runs {
		if _, err := io.CopyN(io.NewOffsetWriter(f, run.off), r, run.n); err != nil {
			return err
		}
	}
	return f.Truncate(size)
}

// writeHoles copies r into f leaving holes where it has whole blocks of
// zeros, and gives f size bytes: a sparse file comes back sparse.
func writeHoles(f *os.File, r io.Reader, size int64) error {
	buf := make([]byte, 64<<10)
	var off int64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if bytes.Count(buf[:n], []byte{0}) == n {
				off += int64(n)
			} else {
				if _, werr := f.WriteAt(buf[:n], off); werr != nil {
					return werr
				}
				off += int64(n)
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	return f.Truncate(max(off, size))
}
