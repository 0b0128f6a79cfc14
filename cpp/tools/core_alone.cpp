// Links every object of trainmem_core, and nothing else, into one program (CMakeLists.txt,
// trainmem_core_alone): a core function that calls into io/ or api.cpp leaves an undefined
// symbol, and the link fails. The program itself does nothing.
int main() { return 0; }
