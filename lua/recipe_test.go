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
