package mpssim

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
)

// client sends its standard input to the daemon of pipe and prints the
// answer, as `echo get_server_list | nvidia-cuda-mps-control` does.
func client(pipe string) int {
	in, _ := io.ReadAll(os.Stdin)
	c, err := net.Dial("unix", pipe+"/control")
	if err != nil {
		fmt.Fprintln(os.Stderr, "Cannot find MPS control daemon process")
		return 1
	}
	c.Write(in)
	c.(*net.UnixConn).CloseWrite()
	io.Copy(os.Stdout, bufio.NewReader(c))
	return 0
}
