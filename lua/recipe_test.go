package lua

import "testing"

// The lock clients' compare-and-delete and compare-and-pexpire scripts are
// recognised in their usual layouts; anything that would run differently is
// not.
func TestRecipeOf(t *testing.T) {
	for _, c := range []struct {
		src  string
		want Recipe
	}{
		{`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, CompareAndDelete},
		{`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`, CompareAndDelete},
		{"-- release\nif redis.call('get', KEYS[1]) == ARGV[1] then\n\treturn redis.call('del', KEYS[1])\nend\nreturn 0\n", CompareAndDelete},
		{"if redis.call(\"get\", KEYS[1]) == ARGV[1] then\n  return redis.call(\"pexpire\", KEYS[1], ARGV[2])\nend\nreturn 0", CompareAndPexpire},
		{`if redis.call('Get',KEYS[1])==ARGV[1] then return redis.call('PExpire',KEYS[1],ARGV[2]) else return 0 end`, CompareAndPexpire},
		// Not the recipe: other keys, arguments, replies, commands or flow.
		{`if redis.call("get",KEYS[2]) == ARGV[1] then return redis.call("del",KEYS[2]) else return 0 end`, NoRecipe},
		{`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 1 end`, NoRecipe},
		{`if redis.call("get",KEYS[1]) ~= ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, NoRecipe},
		{`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("unlink",KEYS[1]) else return 0 end`, NoRecipe},
		{`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end return 1`, NoRecipe},
		{`if redis.call("get",keys[1]) == ARGV[1] then return redis.call("del",keys[1]) else return 0 end`, NoRecipe},
		{`if redis.pcall("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, NoRecipe},
		{`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[1]) else return 0 end`, NoRecipe},
		{"#!lua flags=no-writes\nif redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end", NoRecipe},
		{"--[[ x ]] if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end", NoRecipe},
		{"ifredis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end", NoRecipe},
		// redsync v4's release, as it sends it, and in other layouts.
		{redsyncV4Release, CompareAndDeleteOrMissing},
		{`local val=redis.call('get',KEYS[1]) if val==ARGV[1] then return redis.call('del',KEYS[1]) elseif val==false then return -1 else return 0 end`, CompareAndDeleteOrMissing},
		{`local val = redis.call("GET", KEYS[1]) if val == ARGV[1] then return redis.call("DEL", KEYS[1]) elseif val == false then return 1 else return 0 end`, NoRecipe},
		{`local val = redis.call("GET", KEYS[1]) if val == ARGV[1] then return redis.call("DEL", KEYS[1]) elseif val == nil then return -1 else return 0 end`, NoRecipe},
		{`local val = redis.call("GET", KEYS[1]) if val == ARGV[2] then return redis.call("DEL", KEYS[1]) elseif val == false then return -1 else return 0 end`, NoRecipe},
		{`local v = redis.call("GET", KEYS[1]) if val == ARGV[1] then return redis.call("DEL", KEYS[1]) elseif val == false then return -1 else return 0 end`, NoRecipe},
		// node-redlock v5's release, as it sends it, and in other layouts.
		{redlockV5Release, CompareAndDeleteEach},
		{`local count=0 for i,key in ipairs(KEYS) do if redis.call('GET',key)==ARGV[1] then redis.pcall('DEL',key) count=count+1 end end return count`, CompareAndDeleteEach},
		{`local count = 0 for i, key in ipairs(KEYS) do if redis.call("get", key) == ARGV[1] then redis.call("del", key) count = count + 1 end end return count`, NoRecipe},
		{`local count = 0 for i, key in ipairs(KEYS) do if redis.call("get", key) == ARGV[1] then if redis.call("del", key) == 1 then count = count + 1 end end end return count`, NoRecipe},
		{`local count = 0 for i, key in ipairs(KEYS) do if redis.call("get", key) == ARGV[1] then redis.pcall("del", key) count = count + 2 end end return count`, NoRecipe},
		{`local count = 0 for i, key in pairs(KEYS) do if redis.call("get", key) == ARGV[1] then redis.pcall("del", key) count = count + 1 end end return count`, NoRecipe},
		{`local count = 0 for i, key in ipairs(KEYS) do if redis.call("get", key) == ARGV[1] then redis.pcall("del", key) count = count + 1 end end return #KEYS`, NoRecipe},
	} {
		if got := recipeOf([]byte(c.src)); got != c.want {
			t.Errorf("recipeOf(%q) = %d, want %d", c.src, got, c.want)
		}
	}
	e := New()
	sha, err := e.Load([]byte(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Recipe(sha); got != CompareAndDelete {
		t.Errorf("Recipe of the loaded script = %d, want CompareAndDelete", got)
	}
	if got := e.Recipe("0000000000000000000000000000000000000000"); got != NoRecipe {
		t.Errorf("Recipe of an unknown script = %d, want NoRecipe", got)
	}
}

// The releases of redsync v4 and node-redlock v5, byte for byte as they send
// them (redsync's scripts.go, node-redlock's index.ts).
const (
	redsyncV4Release = `
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
`
	redlockV5Release = `
  local count = 0
  for i, key in ipairs(KEYS) do
    -- Only remove entries for *this* lock value.
    if redis.call("get", key) == ARGV[1] then
      redis.pcall("del", key)
      count = count + 1
    end
  end

  -- Return the number of entries removed.
  return count
`
)
