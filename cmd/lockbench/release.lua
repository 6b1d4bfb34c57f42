-- compare-and-delete: release KEYS[1] only while it still holds ARGV[1] (the
-- owner value this client set); 1 released, 0 not the holder any more.
if redis.call('get', KEYS[1]) == ARGV[1] then
	return redis.call('del', KEYS[1])
end
return 0
