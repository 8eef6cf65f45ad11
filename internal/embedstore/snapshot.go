package embedstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// A snapshot file is a 28-byte header — magic "SCSTORE1", the sequence
// number and the payload's length (uint64, big endian), the CRC-32C of the
// sequence number and payload (uint32) — and the payload: every key, in
// order, as its type, name, absolute expiry (Unix ms, 0: none) and value,
// strings length-prefixed (uvarint), so that any byte survives.
const (
	magic      = "SCSTORE1"
	headerSize = 8 + 8 + 8 + 4
	slotPrefix = "snapshot."
	tmpName    = "snapshot.tmp"
	// LockName is the data directory's lock file.
	LockName = "lock"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Key types in a payload.
const (
	typeString = 's'
	typeHash   = 'h'
	typeList   = 'l'
	typeSet    = 'm'
	typeZSet   = 'z'
)

type entry struct {
	typ      byte
	key      string
	expireAt int64    // Unix ms; 0: no TTL
	strs     []string // string: 1; hash: field, value...; list, set: items; zset: members
	scores   []float64
}

type data []entry

// dump reads every key of m. The caller keeps commands out meanwhile.
func dump(m *miniredis.Miniredis) (data, error) {
	var out data
	now := time.Now()
	for _, k := range m.Keys() {
		e := entry{key: k}
		if ttl := m.TTL(k); ttl > 0 {
			e.expireAt = now.Add(ttl).UnixMilli()
		}
		var err error
		switch t := m.Type(k); t {
		case "":
			continue // expired meanwhile
		case "string":
			e.typ = typeString
			var v string
			v, err = m.Get(k)
			e.strs = []string{v}
		case "hash":
			e.typ = typeHash
			var fs []string
			fs, err = m.HKeys(k)
			slices.Sort(fs)
			for _, f := range fs {
				e.strs = append(e.strs, f, m.HGet(k, f))
			}
		case "list":
			e.typ = typeList
			// A copy: miniredis answers with the list itself, which LSET
			// changes in place once commands run again, while the
			// snapshot is still being encoded and written.
			var l []string
			l, err = m.List(k)
			e.strs = slices.Clone(l)
		case "set":
			e.typ = typeSet
			e.strs, err = m.Members(k)
			slices.Sort(e.strs)
		case "zset":
			e.typ = typeZSet
			var z map[string]float64
			z, err = m.SortedSet(k)
			for mem := range z {
				e.strs = append(e.strs, mem)
			}
			slices.Sort(e.strs)
			for _, mem := range e.strs {
				e.scores = append(e.scores, z[mem])
			}
		default:
			return nil, fmt.Errorf("embedded store: key %q is a %s, which the embedded store does not persist", k, t)
		}
		if err != nil {
			return nil, fmt.Errorf("embedded store: reading key %q: %w", k, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// restore writes d into m, leaving out the keys that expired meanwhile.
func (d data) restore(m *miniredis.Miniredis) error {
	now := time.Now()
	for _, e := range d {
		var ttl time.Duration
		if e.expireAt != 0 {
			if ttl = time.UnixMilli(e.expireAt).Sub(now); ttl <= 0 {
				continue
			}
		}
		var err error
		switch e.typ {
		case typeString:
			err = m.Set(e.key, e.strs[0])
		case typeHash:
			m.HSet(e.key, e.strs...)
		case typeList:
			_, err = m.Push(e.key, e.strs...)
		case typeSet:
			_, err = m.SetAdd(e.key, e.strs...)
		case typeZSet:
			for i, mem := range e.strs {
				if _, err = m.ZAdd(e.key, e.scores[i], mem); err != nil {
					break
				}
			}
		}
		if err != nil {
			return fmt.Errorf("restoring key %q: %w", e.key, err)
		}
		if ttl > 0 {
			m.SetTTL(e.key, ttl)
		}
	}
	return nil
}

func (d data) encode() ([]byte, error) {
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(d)))
	for _, e := range d {
		b = append(b, e.typ)
		str(e.key)
		b = binary.AppendVarint(b, e.expireAt)
		b = binary.AppendUvarint(b, uint64(len(e.strs)))
		for _, s := range e.strs {
			str(s)
		}
		for _, f := range e.scores {
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(f))
		}
	}
	return b, nil
}

var errShort = errors.New("payload ends early")

func decode(b []byte) (data, error) {
	r := bytes.NewReader(b)
	uv := func() (uint64, error) { return binary.ReadUvarint(r) }
	str := func() (string, error) {
		n, err := uv()
		if err != nil {
			return "", err
		}
		if n > uint64(r.Len()) {
			return "", errShort
		}
		s := make([]byte, n)
		_, err = r.Read(s)
		return string(s), err
	}
	n, err := uv()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(b)) {
		return nil, errShort
	}
	d := make(data, 0, n)
	for range n {
		var e entry
		if e.typ, err = r.ReadByte(); err != nil {
			return nil, err
		}
		if !strings.ContainsRune("shlmz", rune(e.typ)) {
			return nil, fmt.Errorf("unknown key type %q", e.typ)
		}
		if e.key, err = str(); err != nil {
			return nil, err
		}
		if e.expireAt, err = binary.ReadVarint(r); err != nil {
			return nil, err
		}
		c, err := uv()
		if err != nil {
			return nil, err
		}
		if c > uint64(r.Len()) || (e.typ == typeString && c != 1) || (e.typ == typeHash && c%2 != 0) {
			return nil, fmt.Errorf("key %q: bad item count %d", e.key, c)
		}
		for range c {
			s, err := str()
			if err != nil {
				return nil, err
			}
			e.strs = append(e.strs, s)
		}
		if e.typ == typeZSet {
			for range c {
				var u uint64
				if err := binary.Read(r, binary.BigEndian, &u); err != nil {
					return nil, err
				}
				e.scores = append(e.scores, math.Float64frombits(u))
			}
		}
		d = append(d, e)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%d bytes after the last key", r.Len())
	}
	return d, nil
}

func checksum(seq uint64, payload []byte) uint32 {
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], seq)
	return crc32.Update(crc32.Checksum(s[:], castagnoli), castagnoli, payload)
}

// writeSnapshot writes payload as snapshot seq: to a temporary file,
// fsynced, renamed over the slot seq%2 (which held seq-2), and the
// directory fsynced, so that the rename itself survives a power loss.
func writeSnapshot(dir string, seq uint64, payload []byte) error {
	h := make([]byte, 0, headerSize+len(payload))
	h = append(h, magic...)
	h = binary.BigEndian.AppendUint64(h, seq)
	h = binary.BigEndian.AppendUint64(h, uint64(len(payload)))
	h = binary.BigEndian.AppendUint32(h, checksum(seq, payload))
	h = append(h, payload...)
	tmp := filepath.Join(dir, tmpName)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(h); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, slotPath(dir, seq)); err != nil {
		return err
	}
	return syncDir(dir)
}

func slotPath(dir string, seq uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%s%d", slotPrefix, seq%2))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// slot is what one snapshot file holds.
type slot struct {
	path    string
	seq     uint64 // 0 when the header is unreadable
	payload []byte
	bad     error // why it cannot be used
}

func readSlot(path string) (*slot, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := &slot{path: path}
	if len(b) < headerSize || string(b[:8]) != magic {
		s.bad = errors.New("not a snapshot, or cut short before its header ends")
		return s, nil
	}
	s.seq = binary.BigEndian.Uint64(b[8:16])
	n := binary.BigEndian.Uint64(b[16:24])
	sum := binary.BigEndian.Uint32(b[24:28])
	switch {
	case n != uint64(len(b)-headerSize):
		s.bad = fmt.Errorf("holds %d bytes of the %d its header announces (torn write)", len(b)-headerSize, n)
	case checksum(s.seq, b[headerSize:]) != sum:
		s.bad = errors.New("fails its checksum (damaged)")
	default:
		s.payload = b[headerSize:]
	}
	return s, nil
}

// load reads the directory's snapshots into the store (see the package
// documentation for what counts as a loss).
func (s *Store) load() error {
	_ = os.Remove(filepath.Join(s.dir, tmpName)) // a write that never finished: never answered
	var slots []*slot
	for i := range 2 {
		sl, err := readSlot(filepath.Join(s.dir, fmt.Sprintf("%s%d", slotPrefix, i)))
		if err != nil {
			return fmt.Errorf("embedded store: %w", err)
		}
		if sl != nil {
			slots = append(slots, sl)
		}
	}
	if len(slots) == 0 {
		// A new directory gets both slots at once: from then on one
		// snapshot alone means the other was lost.
		s.fresh = true
		return s.writeTwo()
	}
	var best *slot
	var problems []string
	var top uint64
	for _, sl := range slots {
		top = max(top, sl.seq)
		if sl.bad != nil {
			problems = append(problems, fmt.Sprintf("%s %s", filepath.Base(sl.path), sl.bad))
			continue
		}
		if best == nil || sl.seq > best.seq {
			best = sl
		}
	}
	var d data
	if best != nil {
		var err error
		if d, err = decode(best.payload); err != nil {
			// Its checksum held: written so by a bug, not by the disk.
			return fmt.Errorf("embedded store: %s passes its checksum but cannot be read (%v); move it away to start from the other snapshot", best.path, err)
		}
	}
	switch {
	case best == nil:
		problems = append(problems, "no snapshot is readable: the store starts empty")
	case len(problems) > 0:
	case len(slots) == 1:
		problems = append(problems, fmt.Sprintf("snapshot %d is alone: the other slot is missing", best.seq))
	case len(slots) == 2 && slots[0].seq+1 != slots[1].seq && slots[1].seq+1 != slots[0].seq:
		problems = append(problems, fmt.Sprintf("snapshots %d and %d are not consecutive: one is an older copy", slots[0].seq, slots[1].seq))
	}
	if err := d.restore(s.m); err != nil {
		return fmt.Errorf("embedded store: %s: %w", best.path, err)
	}
	s.seq = top
	if best != nil {
		s.last = best.payload
	}
	if len(problems) == 0 {
		return nil
	}
	s.lost = strings.Join(problems, "; ")
	if best != nil {
		s.lost += fmt.Sprintf("; loaded snapshot %d", best.seq)
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for _, sl := range slots {
		if sl.bad != nil {
			_ = os.Rename(sl.path, sl.path+".damaged-"+stamp) // kept for a post-mortem
		}
	}
	MarkLost(s.m)
	// Two snapshots, so that both slots are good and consecutive again.
	return s.writeTwo()
}

// writeTwo writes the state twice, filling both slots.
func (s *Store) writeTwo() error {
	for range 2 {
		payload, err := s.encodeNow()
		if err != nil {
			return err
		}
		if err := writeSnapshot(s.dir, s.seq+1, payload); err != nil {
			return fmt.Errorf("embedded store: %w", err)
		}
		s.seq++
		s.last = payload
	}
	return nil
}

func (s *Store) encodeNow() ([]byte, error) {
	d, err := dump(s.m)
	if err != nil {
		return nil, err
	}
	return d.encode()
}

// MarkLost makes every job's state in m look like state Redis lost: it
// removes the epoch of each job's meta hash (the keys "<prefix>:{<job>}:meta"
// of scheduler's store), keeping the rest — pause, last fencing token,
// history. The scheduler's next script on the job then draws a new epoch
// and places the data-loss floor, exactly as after a Redis restart that
// lost writes.
func MarkLost(m *miniredis.Miniredis) {
	for _, k := range m.Keys() {
		if strings.HasSuffix(k, ":meta") && m.Type(k) == "hash" && m.HGet(k, "epoch") != "" {
			m.HDel(k, "epoch")
		}
	}
}
