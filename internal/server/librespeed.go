package server

import (
	"fmt"

	"github.com/sonde-project/sonde/internal/librespeed"
)

// mountLibreSpeed serves LibreSpeed's backend (internal/librespeed) under
// the same admission, duration and byte limits as every test.
func (s *Server) mountLibreSpeed() error {
	load, err := s.newLoad("librespeed")
	if err != nil {
		return fmt.Errorf("librespeed: %w", err)
	}
	h, err := librespeed.NewHandler(load, s.cfg.Software)
	if err != nil {
		return err
	}
	s.mountLoad(h.Routes())
	return nil
}
