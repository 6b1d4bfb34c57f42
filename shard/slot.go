// Package shard maps keys to Redis Cluster hash slots. It is pure: the same key
// always lands in the same slot, on every node and in every client.
package shard

// Slots is the number of hash slots, as in Redis Cluster.
const Slots = 16384

// crcTable is the CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0, no
// reflection) table Redis Cluster's keyslot uses.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc16 is the XMODEM CRC of b.
func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crcTable[byte(c>>8)^x]
	}
	return c
}

// HashPart returns the part of key that is hashed: the content of the first
// {…} when it is not empty (a hash tag, so related keys share a slot), else the
// whole key.
func HashPart(key []byte) []byte {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key // "{}": no tag
				}
				return key[i+1 : j]
			}
		}
		return key // no closing brace
	}
	return key
}

// Slot returns key's hash slot, 0–16383, exactly as Redis Cluster computes it.
func Slot(key []byte) uint16 { return crc16(HashPart(key)) & (Slots - 1) }
