// Package lua runs Redis 7.0 EVAL scripts deterministically on gopher-lua, with Redis's sandbox, redis.* API, reply conversions and error texts.
package lua
