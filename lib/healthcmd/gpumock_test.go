package healthcmd

// The mock GPU backends (mock:<model>) for the tests of this package.
import _ "gpuprep/internal/gpumock"
