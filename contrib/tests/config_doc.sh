#!/bin/bash
# docs/configuration.md must document every variable ucx_info -c prints.
set -euo pipefail
missing=0
for v in $(env -i PATH="$PATH" "$BUILD_DIR/src/tools/info/ucx_info" -c | sed -n 's/^\(UCX_[A-Z0-9_]*\)=.*/\1/p'); do
    if ! grep -q "\`$v\`" "$SRC_DIR/docs/configuration.md"; then
        echo "docs/configuration.md does not document $v (run contrib/gen-config-doc.sh)"
        missing=1
    fi
done
exit $missing
