# Runs pd-codegen on a malformed ops.yaml and checks that it fails with the message given on the
# file's "# expect: " line (read here, at test time, so editing the case needs no reconfigure).
file(STRINGS ${YAML} expect REGEX "^# expect: ")
string(REPLACE "# expect: " "" expect "${expect}")
execute_process(COMMAND ${CODEGEN} ${YAML} ${OUT} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "pd-codegen accepted ${YAML}")
endif()
string(FIND "${err}" "${expect}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "expected '${expect}' in:\n${err}")
endif()
