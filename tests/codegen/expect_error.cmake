# Runs pd-codegen on a malformed ops.yaml and checks it fails with the expected FILE:LINE:COL message.
execute_process(COMMAND ${CODEGEN} ${YAML} ${OUT} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "pd-codegen accepted ${YAML}")
endif()
string(FIND "${err}" "${EXPECT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "expected '${EXPECT}' in:\n${err}")
endif()
