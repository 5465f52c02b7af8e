# Turns a text file into a C string constant: -DIN= -DOUT= -DSYMBOL=
file(READ ${IN} content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
file(WRITE ${OUT} "/* generated from ${IN}; do not edit */\nconst char ${SYMBOL}[] = {${bytes} 0x00};\n")
