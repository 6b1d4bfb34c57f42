package lua

// rand48 is Redis's redisLrand48 (src/rand.c): the POSIX lrand48 generator,
// which Redis uses for math.random so that every platform draws the same
// sequence.
type rand48 uint64

// rand48Initial is the generator state Redis starts with (X2 X1 X0 =
// 0x1234 0xABCD 0x330E). Redis 7.0 never reseeds between scripts, so a run
// here, which always starts from this state, draws what the first script
// after a Redis restart draws.
const rand48Initial rand48 = 0x1234ABCD330E

const rand48Max = 0x7fffffff // REDIS_LRAND48_MAX (INT32_MAX)

func (r *rand48) next() int32 {
	*r = (*r*0x5DEECE66D + 0xB) & (1<<48 - 1)
	return int32(*r >> 17)
}

// seed is redisSrand48.
func (r *rand48) seed(s int32) { *r = rand48(uint64(uint32(s))<<16 | 0x330E) }

// float is the number in [0, 1) math.random derives from one draw.
func (r *rand48) float() float64 {
	return float64(r.next()%rand48Max) / float64(rand48Max)
}
