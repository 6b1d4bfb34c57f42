-- compare-and-pexpire: extend KEYS[1] to ARGV[2] ms only while it still holds
-- ARGV[1] (the owner value this client set); 1 extended, 0 not the holder.
if redis.call('get', KEYS[1]) == ARGV[1] then
	return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
