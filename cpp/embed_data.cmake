# Writes every cpp/data/**/*.json but the message catalog into one C++ file as a constant array
# of (path, contents) pairs: plain string literals, so nothing runs at start-up and the data is
# stored once. Whitespace outside JSON strings is dropped (it means nothing to the parser; the page
# downloads every byte of it).
# Run as: cmake -DDATA_DIR=... -DOUT=... -P embed_data.cmake
file(GLOB_RECURSE files RELATIVE ${DATA_DIR} ${DATA_DIR}/*.json)
# The message catalog is not read as JSON: message_table.cmake writes it as a C++ table.
list(REMOVE_ITEM files messages.json)
list(SORT files)
string(ASCII 1 open)
string(ASCII 2 close)
set(body "// Generated from cpp/data by cpp/embed_data.cmake. Do not edit.\n")
string(APPEND body "#include \"io/embedded_data.hpp\"\nnamespace trainmem {\n")
string(APPEND body "namespace {\nconst EmbeddedFile kFiles[] = {\n")
foreach(f ${files})
  file(READ ${DATA_DIR}/${f} content)
  # Minify: mark every JSON string and every whitespace run, drop the marked whitespace runs,
  # then the marks.
  string(REGEX REPLACE "(\"([^\"\\\\]|\\\\.)*\"|[ \t\r\n]+)" "${open}\\1${close}" content
                       "${content}")
  string(REGEX REPLACE "${open}[ \t\r\n]+${close}" "" content "${content}")
  string(REPLACE "${open}" "" content "${content}")
  string(REPLACE "${close}" "" content "${content}")
  # Raw string literals have a length limit on some compilers; split into 8 KB pieces
  # (adjacent literals are joined by the compiler).
  string(LENGTH "${content}" len)
  string(APPEND body "    {\"${f}\",")
  if(len EQUAL 0)
    string(APPEND body " \"\"")
  endif()
  set(pos 0)
  while(pos LESS len)
    string(SUBSTRING "${content}" ${pos} 8000 piece)
    string(APPEND body "\n     R\"TMJSON(${piece})TMJSON\"")
    math(EXPR pos "${pos} + 8000")
  endwhile()
  string(APPEND body "},\n")
endforeach()
string(APPEND body "};\n}  // namespace\n\n")
string(APPEND body "EmbeddedFiles embedded_files() {\n")
string(APPEND body "  return {kFiles, sizeof kFiles / sizeof kFiles[0]};\n}\n")
string(APPEND body "}  // namespace trainmem\n")
file(WRITE ${OUT} "${body}")
