package queue

import "fmt"

// MaxTubeName is the longest tube name, in bytes.
const MaxTubeName = 200

// ValidTube reports whether name is a tube name beanstalkd accepts: 1 to 200
// bytes of A-Z a-z 0-9 - + / ; . $ _ ( ), not starting with '-'.
func ValidTube(name string) bool {
	if len(name) == 0 || len(name) > MaxTubeName || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !tubeChar(name[i]) {
			return false
		}
	}
	return true
}

func tubeChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '-', '+', '/', ';', '.', '$', '_', '(', ')':
		return true
	}
	return false
}

// CheckTube returns an error wrapping ErrInvalidTube when name is not a valid tube name.
func CheckTube(name string) error {
	if ValidTube(name) {
		return nil
	}
	if len(name) > MaxTubeName {
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrInvalidTube, len(name), MaxTubeName)
	}
	return fmt.Errorf("%w: %q", ErrInvalidTube, name)
}
