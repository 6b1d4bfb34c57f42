package lua

import (
	"math"

	glua "github.com/yuin/gopher-lua"
)

// The bit library Redis bundles (LuaBitOp 1.0.2, lua_bit.c): 32-bit
// operations on numbers, results as signed 32-bit numbers.

// bitArg is barg: the number's value rounded to an integer (the
// 2^52+2^51 addition trick) and taken modulo 2^32.
func bitArg(L *glua.LState, n int) uint32 {
	f, ok := toNumber(L.Get(n))
	bits := uint32(math.Float64bits(f + 6755399441055744.0))
	if bits == 0 && !ok {
		typeError(L, n, "number")
	}
	return bits
}

func bitRet(L *glua.LState, b uint32) int {
	L.Push(glua.LNumber(float64(int32(b))))
	return 1
}

func (s *state) bitFuncs() map[string]glua.LValue {
	L := s.L
	fold := func(op func(a, b uint32) uint32) glua.LValue {
		return L.NewFunction(func(L *glua.LState) int {
			b := bitArg(L, 1)
			for i := L.GetTop(); i > 1; i-- {
				b = op(b, bitArg(L, i))
			}
			return bitRet(L, b)
		})
	}
	shift := func(op func(b, n uint32) uint32) glua.LValue {
		return L.NewFunction(func(L *glua.LState) int {
			b := bitArg(L, 1)
			n := bitArg(L, 2) & 31
			return bitRet(L, op(b, n))
		})
	}
	return map[string]glua.LValue{
		"tobit":   L.NewFunction(func(L *glua.LState) int { return bitRet(L, bitArg(L, 1)) }),
		"bnot":    L.NewFunction(func(L *glua.LState) int { return bitRet(L, ^bitArg(L, 1)) }),
		"band":    fold(func(a, b uint32) uint32 { return a & b }),
		"bor":     fold(func(a, b uint32) uint32 { return a | b }),
		"bxor":    fold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  shift(func(b, n uint32) uint32 { return b << n }),
		"rshift":  shift(func(b, n uint32) uint32 { return b >> n }),
		"arshift": shift(func(b, n uint32) uint32 { return uint32(int32(b) >> n) }),
		"rol":     shift(func(b, n uint32) uint32 { return b<<n | b>>((32-n)&31) }),
		"ror":     shift(func(b, n uint32) uint32 { return b<<((32-n)&31) | b>>n }),
		"bswap": L.NewFunction(func(L *glua.LState) int {
			b := bitArg(L, 1)
			return bitRet(L, b>>24|(b>>8)&0xff00|(b&0xff00)<<8|b<<24)
		}),
		"tohex": L.NewFunction(func(L *glua.LState) int {
			b := bitArg(L, 1)
			n := int32(8)
			if L.GetTop() >= 2 {
				n = int32(bitArg(L, 2))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n = -n
				digits = "0123456789ABCDEF"
			}
			if n > 8 || n < 0 { // n < 0: -MinInt32, which C would crash on
				n = 8
			}
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[b&15]
				b >>= 4
			}
			L.Push(glua.LString(buf))
			return 1
		}),
	}
}
