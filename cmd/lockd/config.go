package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
)

// Configuration has one source of truth: lockd's flags. Each flag can also be
// given in the environment as LOCKD_<NAME> (upper case, '-' as '_', e.g.
// LOCKD_DATA_DIR) or in the file named by -config as "name = value" lines (#
// starts a comment; the name is the flag's, without the dash). The command
// line wins over the environment, which wins over the file.

// envName is the environment variable of a flag.
func envName(flagName string) string {
	return "LOCKD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyConfig sets every flag that the command line did not set from the
// environment, then from the config file (when path is not empty). Unknown
// names in the file and bad values are errors.
func applyConfig(fs *flag.FlagSet, path string, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var fileVals map[string]string
	if path != "" {
		var err error
		if fileVals, err = readConfigFile(path); err != nil {
			return err
		}
		for name := range fileVals {
			if fs.Lookup(name) == nil {
				return fmt.Errorf("config file %s: unknown setting %q (settings are the flags, see lockd -help)", path, name)
			}
		}
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] || f.Name == "config" {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %v", envName(f.Name), v, e)
			}
			return
		}
		if v, ok := fileVals[f.Name]; ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("config file %s: %s = %q: %v", path, f.Name, v, e)
			}
		}
	})
	return err
}

// readConfigFile reads "name = value" lines.
func readConfigFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("config file %s:%d: want name = value, got %q", path, n, line)
		}
		name = strings.TrimPrefix(strings.TrimSpace(name), "-")
		val = strings.Trim(strings.TrimSpace(val), `"`)
		out[name] = val
	}
	return out, sc.Err()
}
