// Package snowflakeenv stops the Snowflake driver from writing and loading
// its optional native library ("minicore") in every etl-craft process at
// start-up. The driver does that from its own init unless
// SF_DISABLE_MINICORE is true; Go initializes ready packages in import-path
// order, so this package (github.com/etl-craft/…) sets the variable before
// github.com/snowflakedb/gosnowflake initializes. A value the user set wins.
package snowflakeenv

import "os"

// Variable is the driver's switch for its native library.
const Variable = "SF_DISABLE_MINICORE"

func init() {
	if _, set := os.LookupEnv(Variable); !set {
		os.Setenv(Variable, "true")
	}
}
