package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
)

// A graph file of version 2 or later is sealed: its second line is
//
//	"checksum": "sha256:<64 hex digits>",
//
// the SHA-256 of the file's exact bytes without that line (which are
// themselves the graph as JSON). Any change after Export — one flipped
// bit, a space, a reformatting — makes the file fail the check. The
// parameters file is covered through the SHA-256 the graph records for it
// ("parameters": {"sha256": ...}). To check by hand:
// sed 2d model.json | sha256sum.

// sealStart is how a sealed graph file starts, up to the digest.
const sealStart = "{\n \"checksum\": \"sha256:"

// sealEnd follows the digest.
const sealEnd = "\",\n"

// sealLen is the length of the checksum line, from after "{\n" to its
// newline included.
const sealLen = len(sealStart) - 2 + 64 + len(sealEnd)

// seal inserts the checksum line into an unsealed graph file (one that
// starts with "{\n").
func seal(body []byte) []byte {
	sum := sha256.Sum256(body)
	out := make([]byte, 0, len(body)+sealLen)
	out = append(out, sealStart...)
	out = hex.AppendEncode(out, sum[:])
	out = append(out, sealEnd...)
	return append(out, body[2:]...)
}

// unseal returns the digest a sealed file records and the file without
// its checksum line; ok is false when the file does not start with a
// well-formed checksum line.
func unseal(raw []byte) (digest string, body []byte, ok bool) {
	end := 2 + sealLen
	if len(raw) < end || !bytes.HasPrefix(raw, []byte(sealStart)) || !bytes.Equal(raw[end-len(sealEnd):end], []byte(sealEnd)) {
		return "", nil, false
	}
	d := raw[len(sealStart) : end-len(sealEnd)]
	for _, c := range d {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", nil, false
		}
	}
	body = make([]byte, 0, len(raw)-sealLen)
	body = append(body, raw[:2]...)
	return string(d), append(body, raw[end:]...), true
}

// sha256Hex is the hex SHA-256 of data.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
