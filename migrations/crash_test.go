package migrations_test

func runCrashChild(role string) int { return 2 }

const crashRoleEnv = "MIGRATIONS_CRASH_ROLE"
